//! Drawing one frame of `top`.

use super::{SortKey, State};
use crate::findings::{Finding, Severity};
use crate::ledger::MemClass;
use crate::outputs::safe_text::{display_safe, safe};
use crate::outputs::table::driver_held_line;
use crate::sources::drm_devices::DeviceInfo;
use crate::units::human_bytes;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::Frame;
use std::collections::BTreeMap;

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64).clamp(0.0, 1.0)
    }
}

/// Cells of a device's VRAM bar.
const BAR: usize = 32;

/// One device: its VRAM held by processes drawn against the capacity the driver, NVML or dmem
/// states. Without a capacity there is no bar: one scaled to anything else would look full.
fn device_line<'a>(d: &DeviceInfo, held: u64, dmem: &BTreeMap<String, u64>) -> Line<'a> {
    let head = Span::raw(format!(
        "{:<14} {:<6} ",
        display_safe(&d.id),
        display_safe(d.driver.as_deref().unwrap_or("-"))
    ));
    match d.local_capacity(dmem) {
        Some(cap) => {
            let filled = (ratio(held, cap) * BAR as f64).round() as usize;
            Line::from(vec![
                head,
                Span::styled("█".repeat(filled), Style::default().fg(Color::Cyan)),
                Span::raw("░".repeat(BAR - filled)),
                Span::raw(format!(
                    " VRAM held {} of {}",
                    human_bytes(held),
                    human_bytes(cap)
                )),
            ])
        }
        None => Line::from(vec![
            head,
            Span::styled(
                format!("{:<BAR$}", "no capacity"),
                Style::default().fg(Color::DarkGray),
            ),
            Span::raw(format!(" VRAM held {}", human_bytes(held))),
        ]),
    }
}

fn finding_line(x: &Finding) -> Line<'static> {
    let color = match x.severity {
        Severity::Critical => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Info => Color::Gray,
    };
    Line::from(vec![
        Span::styled(
            format!(
                "{:<8} {}: ",
                x.severity.as_str().to_uppercase(),
                x.kind.as_str()
            ),
            Style::default().fg(color).add_modifier(Modifier::BOLD),
        ),
        Span::raw(safe(&x.message)),
    ])
}

/// Rows a line takes when wrapped at word boundaries to `width` columns (greedy, as the
/// paragraph wraps; a word longer than a row is cut).
fn wrapped_rows(line: &Line, width: usize) -> usize {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let width = width.max(1);
    let mut rows = 1;
    let mut used = 0;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        let need = if used == 0 { w } else { used + 1 + w };
        if need <= width {
            used = need;
        } else if w <= width {
            rows += 1;
            used = w;
        } else {
            rows += (used > 0) as usize + (w - 1) / width;
            used = (w - 1) % width + 1;
        }
    }
    rows
}

/// The findings, most severe first, each in rows of its own; when they do not all fit, the last
/// row says how many more there are (the snapshot lists them all).
fn findings_panel(f: &mut Frame, area: Rect, findings: &[Finding]) {
    let block = Block::default().borders(Borders::ALL).title(" findings ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    if findings.is_empty() {
        f.render_widget(Paragraph::new("no findings"), inner);
        return;
    }
    let bottom = inner.y + inner.height;
    let mut y = inner.y;
    for (i, x) in findings.iter().enumerate() {
        let line = finding_line(x);
        let need = wrapped_rows(&line, inner.width as usize) as u16;
        let more_row = u16::from(i + 1 < findings.len());
        let room = bottom.saturating_sub(y).saturating_sub(more_row);
        // The first finding is drawn even when cut: an empty panel would hide the worst one.
        let height = if need <= room || i == 0 {
            need.min(room)
        } else {
            0
        };
        if height == 0 {
            let more = Line::styled(
                format!("+{} more (gpuledger lists them all)", findings.len() - i),
                Style::default().add_modifier(Modifier::BOLD),
            );
            f.render_widget(
                Paragraph::new(more),
                Rect {
                    y,
                    height: 1,
                    ..inner
                },
            );
            return;
        }
        let rect = Rect { y, height, ..inner };
        f.render_widget(Paragraph::new(line).wrap(Wrap { trim: true }), rect);
        y += height;
    }
}

/// Draws the frame.
pub fn draw(f: &mut Frame, s: &State) {
    let l = &s.ledger;
    let devices = l.devices.len().max(1) as u16;
    let areas = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(devices + 2),
        Constraint::Min(6),
        Constraint::Length(8),
        Constraint::Length(4),
        Constraint::Length(1),
    ])
    .split(f.area());

    let h = &l.host;
    let total = h.mem_total.unwrap_or(0);
    let avail = h.mem_available.unwrap_or(0);
    let label = format!(
        "used {} / {}   available {}   {}",
        human_bytes(total.saturating_sub(avail)),
        human_bytes(total),
        human_bytes(avail),
        driver_held_line(h.driver_held())
    );
    let low = (avail as f64) < total as f64 * 0.1;
    f.render_widget(
        Gauge::default()
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" host memory "),
            )
            .gauge_style(Style::default().fg(if low { Color::Red } else { Color::Green }))
            .ratio(ratio(total.saturating_sub(avail), total))
            .label(label),
        areas[0],
    );

    let local_of = |dev: &str| -> u64 {
        l.processes
            .iter()
            .map(|p| p.resident(dev, MemClass::Device))
            .fold(0, u64::saturating_add)
    };
    let dev_lines: Vec<Line> = if l.devices.is_empty() {
        vec![Line::from("no GPU device")]
    } else {
        l.devices
            .iter()
            .map(|d| device_line(d, local_of(&d.id), &l.dmem_capacity))
            .collect()
    };
    f.render_widget(
        Paragraph::new(dev_lines).block(Block::default().borders(Borders::ALL).title(" devices ")),
        areas[1],
    );

    let mut rows: Vec<(u64, u64, Option<u32>, u32, Row)> = Vec::new();
    for p in &l.processes {
        for d in p.devices() {
            let (loc, host) = (
                p.resident(d, MemClass::Device),
                p.resident(d, MemClass::Host),
            );
            let home = p.home_device.as_deref() == Some(d);
            rows.push((
                host,
                loc,
                p.rank,
                p.pid,
                Row::new(vec![
                    p.pid.to_string(),
                    p.rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                    safe(&p.comm),
                    format!("{}{}", display_safe(d), if home { " *" } else { "" }),
                    human_bytes(loc),
                    human_bytes(host),
                ]),
            ));
        }
    }
    match s.sort {
        SortKey::Host => rows.sort_by_key(|r| std::cmp::Reverse(r.0)),
        SortKey::Local => rows.sort_by_key(|r| std::cmp::Reverse(r.1)),
        SortKey::Rank => rows.sort_by_key(|r| (r.2.is_none(), r.2, r.3)),
        SortKey::Pid => rows.sort_by_key(|r| r.3),
    }
    let sort_name = s.sort.name();
    let table = Table::new(
        rows.into_iter().map(|r| r.4),
        [
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Length(16),
            Constraint::Length(16),
            Constraint::Length(11),
            Constraint::Length(11),
        ],
    )
    .header(
        Row::new(["PID", "RANK", "COMM", "DEVICE (*home)", "LOCAL", "HOST"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!(" processes (sorted by {sort_name}) ")),
    );
    f.render_widget(table, areas[2]);

    findings_panel(f, areas[3], &s.findings);

    let halves = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(areas[4]);
    let host_hist: Vec<u64> = s.history.iter().map(|h| h.0).collect();
    let local_hist: Vec<u64> = s.history.iter().map(|h| h.1).collect();
    let last = |v: &[u64]| human_bytes(*v.last().unwrap_or(&0));
    f.render_widget(
        Sparkline::default()
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!(" host-class total {} ", last(&host_hist))),
            )
            .style(Style::default().fg(Color::Red))
            .data(&host_hist[host_hist.len().saturating_sub(halves[0].width as usize)..]),
        halves[0],
    );
    f.render_widget(
        Sparkline::default()
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!(" device-local total {} ", last(&local_hist))),
            )
            .style(Style::default().fg(Color::Cyan))
            .data(&local_hist[local_hist.len().saturating_sub(halves[1].width as usize)..]),
        halves[1],
    );
    f.render_widget(
        Paragraph::new(" q quit   s sort (host-class, device-local, rank, pid)   * = home device")
            .wrap(Wrap { trim: true }),
        areas[5],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{analyze, Thresholds};
    use crate::ledger::Ledger;
    use crate::root::Root;
    use crate::sampler::{Sampler, SamplerOptions, Scope};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::path::Path;

    /// seed-2622 with a comm that would clear the screen, forge a row and reverse the text, and
    /// no environment (so the finding names the process by comm).
    fn hostile_state() -> (tempfile::TempDir, State) {
        let dir = tempfile::tempdir().unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed-2622");
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(fixture.join("."))
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let proc = dir.path().join("proc/116400");
        std::fs::write(proc.join("comm"), "\u{1b}[2Jpwn\nx\u{202e}\u{9b}\n").unwrap();
        std::fs::remove_file(proc.join("environ")).unwrap();
        let root = Root::open(dir.path()).unwrap();
        let snap = Sampler::new(root, Scope::All, SamplerOptions::default())
            .sample()
            .unwrap();
        let ledger = Ledger::from_snapshot(snap);
        let findings = analyze(&ledger, &Thresholds::default());
        let state = State {
            ledger,
            findings,
            history: Default::default(),
            sort: SortKey::Host,
        };
        (dir, state)
    }

    fn fixture_state(name: &str) -> State {
        let root = Root::open(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(name),
        )
        .unwrap();
        let snap = Sampler::new(root, Scope::All, SamplerOptions::default())
            .sample()
            .unwrap();
        let ledger = Ledger::from_snapshot(snap);
        State {
            findings: analyze(&ledger, &Thresholds::default()),
            ledger,
            history: Default::default(),
            sort: SortKey::Host,
        }
    }

    /// The screen's rows that start with `device` (inside the devices box).
    fn device_row(state: &State, device: &str) -> String {
        screen(state, 160, 40)
            .into_iter()
            .find(|row| row.trim_start_matches('│').starts_with(device))
            .unwrap_or_else(|| panic!("no row for {device}"))
    }

    #[test]
    fn vram_bar_is_drawn_against_the_device_capacity() {
        // 3 GiB held on a 12 GiB B580 (capacity from dmem.capacity): a quarter of the bar.
        let state = fixture_state("xe-suspended");
        let busy = device_row(&state, "0000:03:00.0");
        assert_eq!(busy.matches('█').count(), BAR / 4, "{busy}");
        assert_eq!(busy.matches('░').count(), BAR - BAR / 4, "{busy}");
        assert!(busy.contains("VRAM held 3.0 GiB of 12.0 GiB"), "{busy}");
        // The suspended card still has its capacity, and nothing held.
        let asleep = device_row(&state, "0000:04:00.0");
        assert_eq!(asleep.matches('░').count(), BAR, "{asleep}");
        assert!(asleep.contains("of 12.0 GiB"), "{asleep}");
    }

    #[test]
    fn no_capacity_draws_no_bar() {
        // seed-2622's xe cards have no dmem.capacity: the busiest must not be drawn full.
        let state = fixture_state("seed-2622");
        let row = device_row(&state, "0000:03:00.0");
        assert!(row.contains("no capacity"), "{row}");
        assert!(!row.contains('█') && !row.contains('░'), "{row}");
    }

    /// The screen's rows, as text.
    fn screen(state: &State, width: u16, height: u16) -> Vec<String> {
        let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
        term.draw(|f| draw(f, state)).unwrap();
        let buf = term.backend().buffer();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect()
    }

    #[test]
    fn findings_that_do_not_fit_are_counted() {
        let mut state = fixture_state("seed-2622");
        let three = state.findings.clone();
        assert_eq!(three.len(), 3);
        let rows = screen(&state, 400, 40);
        assert!(
            !rows.iter().any(|r| r.contains(" more (gpuledger")),
            "3 fit"
        );
        state.findings = three.iter().cycle().take(12).cloned().collect();
        for width in [400, 120, 60] {
            let rows = screen(&state, width, 40);
            let starts = rows
                .iter()
                .filter(|r| r.trim_start_matches('│').starts_with("CRITICAL "))
                .count();
            let more = format!("+{} more (gpuledger lists them all)", 12 - starts);
            assert!(
                starts >= 1,
                "width {width}: the worst finding is always drawn"
            );
            assert!(
                rows.iter().any(|r| r.contains(&more)),
                "width {width}: want {more:?} in\n{}",
                rows.join("\n")
            );
        }
    }

    #[test]
    fn wrapping_counts_rows_as_the_paragraph_does() {
        let line = Line::from("aaa bbb ccc");
        assert_eq!(wrapped_rows(&line, 11), 1);
        assert_eq!(wrapped_rows(&line, 7), 2);
        assert_eq!(wrapped_rows(&line, 3), 3);
        assert_eq!(wrapped_rows(&Line::from("abcdefgh"), 3), 3);
    }

    #[test]
    fn hostile_comm_is_drawn_escaped() {
        let (_dir, state) = hostile_state();
        let mut term = Terminal::new(TestBackend::new(250, 50)).unwrap();
        term.draw(|f| draw(f, &state)).unwrap();
        let cells: String = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(
            !cells.chars().any(crate::outputs::safe_text::is_unsafe_char),
            "raw control characters reached the screen"
        );
        let shown = "\\e[2Jpwn\\nx\\u{202e}\\u{009b}";
        assert!(cells.contains(shown), "escaped comm in the table");
        assert!(
            cells.contains(&format!("pid 116400 ({shown}")),
            "escaped comm in the finding"
        );
    }
}
