//! The traced calls compared: with the counters of the same run (`show`, `report`), and between
//! two runs (`diff`). The library decided every verdict (`timeline::calls`); this only words it.

use super::text_table::{render, render_fit, Align};
use super::wrap;
use crate::timeline::calls::{Agreement, CallCheck, CallDiffRow, CheckClass};
use crate::units::human_bytes;

/// What one check's agreement means, in words.
pub fn agreement_text(c: &CallCheck) -> String {
    let mut text = match c.agreement {
        Agreement::Within => "agree".to_string(),
        Agreement::Context => format!(
            "counter larger by {}: the runtime's context (no call makes it)",
            human_bytes(c.counter_peak - c.traced_peak)
        ),
        Agreement::CounterLarger(by) => match c.class {
            CheckClass::Host => format!(
                "counter larger by {}: the driver holds more than the calls asked",
                human_bytes(by)
            ),
            CheckClass::Device => format!(
                "counter larger by {}: more than a context (untraced calls, or the driver)",
                human_bytes(by)
            ),
        },
        Agreement::CallsLarger(by) => format!(
            "calls larger by {}: not (yet) resident, or not counted",
            human_bytes(by)
        ),
    };
    if c.registered_peak > 0 {
        text.push_str(&format!(
            "; {} of the calls registered pages in place (cudaHostRegister), which no kernel counter shows",
            human_bytes(c.registered_peak)
        ));
    }
    text
}

/// "Counters against calls": one row per traced process and class, fitted to `width` columns
/// (the verdicts wrap).
pub fn render_checks(checks: &[CallCheck], width: usize) -> String {
    if checks.is_empty() {
        return String::new();
    }
    let headers = [
        ("PID", Align::Right),
        ("MEMORY", Align::Left),
        ("COUNTER PEAK", Align::Right),
        ("CALLS PEAK", Align::Right),
        ("", Align::Wrap),
    ];
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|c| {
            vec![
                c.pid.to_string(),
                c.class.name().to_string(),
                human_bytes(c.counter_peak),
                human_bytes(c.traced_peak),
                agreement_text(c),
            ]
        })
        .collect();
    let head = "Counters against calls (peaks; the margins are in docs/REFERENCE.md)";
    format!(
        "\n{}{}",
        wrap::paragraph("", head, width),
        render_fit("  ", &headers, &rows, width)
    )
}

/// `diff`'s "by call" section: each API kind in A and B, then a line for every kind one run
/// makes and the other does not.
pub fn render_call_diff(rows: &[CallDiffRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let headers = [
        ("API", Align::Left),
        ("CALLS A", Align::Right),
        ("CALLS B", Align::Right),
        ("LIVE AT PEAK A", Align::Right),
        ("LIVE AT PEAK B", Align::Right),
        ("FAILED A/B", Align::Right),
    ];
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let side = |i: usize, v: String| if r.traced[i] { v } else { "not traced".into() };
            vec![
                format!("{} {}", r.platform.name(), r.api.name()),
                side(0, r.calls[0].to_string()),
                side(1, r.calls[1].to_string()),
                side(0, human_bytes(r.peak_live[0])),
                side(1, human_bytes(r.peak_live[1])),
                format!("{}/{}", r.failed[0], r.failed[1]),
            ]
        })
        .collect();
    let mut out = format!(
        "\nBy call (traced; summed over processes and devices)\n{}",
        render("  ", &headers, &table)
    );
    for r in rows {
        let Some((none, some, i)) = r.only_one() else {
            continue;
        };
        out.push_str(&format!(
            "{none} makes no {} calls where {some} makes {} ({} live at peak)\n",
            r.api.name(),
            r.calls[i],
            human_bytes(r.peak_live[i])
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuledger_trace_wire::{Api, Platform};

    fn check(class: CheckClass, counter: u64, traced: u64, agreement: Agreement) -> CallCheck {
        CallCheck {
            pid: 5,
            class,
            counter_peak: counter,
            traced_peak: traced,
            registered_peak: 0,
            agreement,
        }
    }

    #[test]
    fn says_which_side_is_larger_and_by_how_much() {
        let h = check(
            CheckClass::Host,
            9 << 30,
            0,
            Agreement::CounterLarger(9 << 30),
        );
        let s = render_checks(&[h], usize::MAX);
        assert!(
            s.contains("counter larger by 9.0 GiB: the driver holds more"),
            "{s}"
        );
        let mut r = check(CheckClass::Host, 0, 0, Agreement::Within);
        r.registered_peak = 2 << 30;
        assert!(agreement_text(&r).contains("2.0 GiB of the calls registered pages in place"));
        assert_eq!(render_checks(&[], wrap::DEFAULT_WIDTH), "");
    }

    #[test]
    fn verdicts_wrap_to_the_width() {
        let mut r = check(
            CheckClass::Host,
            0,
            3 << 30,
            Agreement::CallsLarger(3 << 30),
        );
        r.registered_peak = 2 << 30;
        let narrow = render_checks(std::slice::from_ref(&r), wrap::DEFAULT_WIDTH);
        assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words(&narrow).contains(&agreement_text(&r)), "{narrow}");
        let wide = render_checks(&[r], 300);
        assert_eq!(
            wide.lines().count(),
            4,
            "blank, heading, header, one row: {wide}"
        );
    }

    #[test]
    fn names_the_kind_only_one_run_makes() {
        let row = CallDiffRow {
            platform: Platform::LevelZero,
            api: Api::Residency,
            calls: [12, 0],
            peak_live: [9 << 30, 0],
            failed: [0, 0],
            traced: [true, true],
        };
        let s = render_call_diff(std::slice::from_ref(&row));
        assert!(
            s.contains("B makes no residency calls where A makes 12 (9.0 GiB live at peak)"),
            "{s}"
        );
        let untraced_b = CallDiffRow {
            traced: [true, false],
            ..row
        };
        let s = render_call_diff(&[untraced_b]);
        assert!(s.contains("not traced") && !s.contains("makes no"), "{s}");
    }
}
