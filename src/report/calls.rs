//! The report's quote of the traced calls: the calls that hold the most, the failed ones, the
//! counters against them, and between two runs the kinds of call only one of them makes.

use super::escape::text;
use crate::outputs::calls_compare::agreement_text;
use crate::timeline::{diff, RunSummary};
use crate::units::human_bytes;
use std::fmt::Write;

/// Calls quoted per recording.
const TOP: usize = 5;

/// One recording's top calls (by bytes live at their peak) and its counters against them;
/// empty when the run was not traced.
pub(super) fn section(s: &RunSummary) -> String {
    let Some(calls) = &s.calls else {
        return String::new();
    };
    let mut rows: Vec<_> = calls.rows.iter().collect();
    if rows.is_empty() {
        return String::new();
    }
    rows.sort_by(|a, b| b.peak_live.cmp(&a.peak_live).then(a.pid.cmp(&b.pid)));
    let mut t = String::from(
        "Top calls (API-level trace):\n\n| pid | API | device | calls | live at peak | largest call | failed |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows.iter().take(TOP) {
        let failed: Vec<String> = r.failed.iter().map(|(e, n)| format!("{n} × {e}")).collect();
        let _ = writeln!(
            t,
            "| {} | {} {} | {} | {} | {} | {} | {} |",
            r.pid,
            r.platform.name(),
            r.api.name(),
            r.device.map_or("host".into(), |d| d.to_string()),
            r.calls,
            human_bytes(r.peak_live),
            human_bytes(r.largest),
            if failed.is_empty() {
                "-".into()
            } else {
                text(&failed.join(", "))
            }
        );
    }
    if calls.dropped > 0 || calls.not_stored > 0 {
        let _ = writeln!(
            t,
            "\n{} events dropped and {} not stored: the figures above are low.",
            calls.dropped, calls.not_stored
        );
    }
    for c in &s.call_checks {
        let _ = writeln!(
            t,
            "- pid {} {} memory: counter peak {}, calls peak {}: {}",
            c.pid,
            c.class.name(),
            human_bytes(c.counter_peak),
            human_bytes(c.traced_peak),
            text(&agreement_text(c))
        );
    }
    t.push('\n');
    t
}

/// The kinds of call one run makes and the other does not.
pub(super) fn diff_lines(d: &diff::Diff) -> String {
    let mut t = String::new();
    for r in &d.calls {
        let Some((none, some, i)) = r.only_one() else {
            continue;
        };
        let _ = writeln!(
            t,
            "\n{none} makes no {} {} calls where {some} makes {} ({} live at peak).",
            r.platform.name(),
            r.api.name(),
            r.calls[i],
            human_bytes(r.peak_live[i])
        );
    }
    t
}
