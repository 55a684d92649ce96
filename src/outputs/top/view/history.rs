//! The history sparklines: driver-held host memory and the machine's host-class and
//! device-local totals, then the same two for the device and the process at the top of their
//! panes (scroll a pane to choose). Each line is drawn as text so that it fits any width: the
//! sparks shrink, the label and the latest values stay whole.

use super::super::history::History;
use crate::outputs::safe_text::display_safe;
use crate::units::human_bytes;
use std::collections::VecDeque;

/// Eighths of a cell, lowest first; a zero is a blank.
const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The last `width` values of `series` as a sparkline scaled to their largest, left-padded with
/// blanks to `width` while the history is shorter.
pub(super) fn spark(series: &VecDeque<u64>, width: usize) -> String {
    let shown: Vec<u64> = series
        .iter()
        .skip(series.len().saturating_sub(width))
        .copied()
        .collect();
    let max = shown.iter().copied().max().unwrap_or(0);
    let mut out = " ".repeat(width - shown.len());
    for v in shown {
        let level = if max == 0 {
            0
        } else {
            ((v as u128 * 8).div_ceil(max as u128)) as usize
        };
        out.push(LEVELS[level.min(8)]);
    }
    out
}

/// `label  name spark value  name spark value…` in at most `width` columns: the sparks share
/// what the label and the values leave.
fn line(label: &str, series: &[(&str, &VecDeque<u64>)], width: usize) -> String {
    let values: Vec<String> = series
        .iter()
        .map(|(_, s)| human_bytes(s.back().copied().unwrap_or(0)))
        .collect();
    let fixed = label.chars().count()
        + series
            .iter()
            .zip(&values)
            .map(|((name, _), v)| 2 + name.len() + 2 + v.len())
            .sum::<usize>();
    let each = width.saturating_sub(fixed) / series.len().max(1);
    let mut out = label.to_string();
    for ((name, s), v) in series.iter().zip(&values) {
        out.push_str(&format!("  {name} {} {v}", spark(s, each)));
    }
    out
}

/// The history lines for a pane `width` wide: the machine, the device `device` and the process
/// `pid` (those that have a history), labels padded to one width.
pub(super) fn lines(
    h: &History,
    device: Option<&str>,
    pid: Option<u32>,
    width: usize,
) -> Vec<String> {
    let dev = device.and_then(|d| Some((display_safe(d).into_owned(), h.devices.get(d)?)));
    let proc = pid.and_then(|p| Some((format!("pid {p}"), h.processes.get(&p)?)));
    let pad = ["machine".len()]
        .into_iter()
        .chain(dev.iter().map(|(l, _)| l.chars().count()))
        .chain(proc.iter().map(|(l, _)| l.chars().count()))
        .max()
        .unwrap_or(0);
    let label = |l: &str| format!("{l:<pad$}");
    let mut out = vec![line(
        &label("machine"),
        &[
            ("driver-held", &h.driver_held),
            ("host", &h.total.host),
            ("local", &h.total.local),
        ],
        width,
    )];
    for (l, pair) in dev.iter().chain(proc.iter()) {
        out.push(line(
            &label(l),
            &[("host", &pair.host), ("local", &pair.local)],
            width,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparks_scale_to_the_largest_shown_and_pad_a_short_history() {
        let s: VecDeque<u64> = [0, 1, 4, 8].into();
        assert_eq!(spark(&s, 4), " ▁▄█");
        assert_eq!(spark(&s, 6), "   ▁▄█");
        assert_eq!(spark(&s, 2), "▄█");
        assert_eq!(spark(&[0, 0].into(), 2), "  ");
        assert_eq!(spark(&s, 0), "");
    }

    #[test]
    fn lines_fit_the_width_and_keep_labels_and_values_whole() {
        let mut h = History::default();
        let mut l = crate::ledger::Ledger::default();
        l.devices.push(crate::sources::drm_devices::DeviceInfo {
            id: "0000:03:00.0".into(),
            ..Default::default()
        });
        h.push(&l);
        h.processes.entry(4001).or_default();
        for width in [78, 198] {
            let got = lines(&h, Some("0000:03:00.0"), Some(4001), width);
            assert_eq!(got.len(), 3, "{got:?}");
            assert!(got.iter().all(|x| x.chars().count() <= width), "{got:?}");
            assert!(
                got.iter().all(|x| x.chars().count() + 3 > width),
                "sparks fill: {got:?}"
            );
            assert!(got[0].starts_with("machine       driver-held "), "{got:?}");
            assert!(got[1].starts_with("0000:03:00.0  host "), "{got:?}");
            assert!(got[2].starts_with("pid 4001      host "), "{got:?}");
        }
        assert_eq!(lines(&h, Some("gone"), Some(7), 80).len(), 1);
    }
}
