//! The report's lines from the job's own evidence: throughput series, the first runtime error
//! lines (in a code block, escaped) and the phase markers.

use super::escape::{fenced, text, visible};
use crate::timeline::diff::{self, Value};
use crate::timeline::evidence::approx;
use crate::timeline::EvidenceSummary;
use std::fmt::Write;

/// Error lines a recording's section quotes.
const QUOTED_ERRORS: usize = 10;

/// A recording's evidence, or nothing when its output was not captured.
pub(super) fn section(e: &EvidenceSummary) -> String {
    let mut t = String::new();
    if !e.captured {
        return t;
    }
    for r in &e.rates {
        let at = |v: Option<f64>| {
            v.map(|v| approx(v, r.unit.as_deref()))
                .unwrap_or_else(|| "none".into())
        };
        let _ = writeln!(
            t,
            "- throughput {}: median {} over {} points (first {}, last {})",
            text(&r.name),
            text(&at(r.median)),
            r.n,
            text(&at(r.first)),
            text(&at(r.last))
        );
    }
    if !e.markers.is_empty() {
        let marks: Vec<String> = e
            .markers
            .iter()
            .take(QUOTED_ERRORS)
            .map(|m| format!("{:.1} s {}", m.t_s, m.text))
            .collect();
        let _ = writeln!(t, "- phase markers: {}", text(&marks.join("; ")));
    }
    if e.errors.is_empty() {
        let _ = writeln!(
            t,
            "- no runtime or driver error lines in the job's output ({} lines)",
            e.lines
        );
        return t + "\n";
    }
    let _ = writeln!(
        t,
        "- runtime or driver error lines in the job's output: {} (the first {} below)\n",
        e.error_count(),
        e.errors.len().min(QUOTED_ERRORS)
    );
    let body: String = e
        .errors
        .iter()
        .take(QUOTED_ERRORS)
        .map(|l| {
            format!(
                "[{:.1} s {}] {}\n",
                l.t_s,
                l.kind.as_str(),
                visible(&l.text, false)
            )
        })
        .collect();
    t.push_str(&fenced(&body));
    t.push('\n');
    t
}

/// The sentence under the bad-vs-good table for each throughput row: whether the medians differ.
pub(super) fn throughput_lines(d: &diff::Diff) -> String {
    let mut t = String::new();
    for r in &d.rows {
        if let (Value::Rate(_), Value::Rate(_)) = (&r.a, &r.b) {
            let _ = writeln!(
                t,
                "- {}: {} vs {}: {}",
                text(&r.what),
                text(&r.a.show()),
                text(&r.b.show()),
                text(&diff::change(&r.a, &r.b))
            );
        }
    }
    if t.is_empty() {
        return t;
    }
    format!("\n{t}")
}
