//! API-attributed bytes: one chart per traced API kind with A and B overlaid, beside the
//! counters' charts above it. The library summed the calls (`timeline::calls::live_by_api`).

use super::chart::{chart, Line, Scale};
use super::page::{esc, Section};
use super::series::GIB;
use super::Run;
use crate::timeline::calls::live_by_api;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A step line from (t_ms, bytes) changes: each value holds until the next change.
fn steps(first_ms: u64, points: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    let mut before = 0.0;
    for &(t, v) in points {
        let s = t.saturating_sub(first_ms) as f64 / 1000.0;
        out.push((s, before));
        before = v as f64 / GIB;
        out.push((s, before));
    }
    out
}

/// The section, `None` when no run was traced.
pub fn section(runs: &[Run]) -> Option<Section> {
    let mut charts: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let Some(calls) = &r.summary.calls else {
            continue;
        };
        for l in live_by_api(calls) {
            charts
                .entry(format!("{} {}", l.platform.name(), l.api.name()))
                .or_default()
                .push(Line {
                    run: i,
                    points: steps(r.rec.host.first_ms, &l.points),
                    steps: Vec::new(),
                });
        }
    }
    if charts.is_empty() {
        return None;
    }
    let scale = Scale::fitting(charts.values().flatten(), "GiB");
    let mut body = String::from(
        "<p>Bytes live per API kind, from the job's traced calls (summed over processes and devices).</p>\n<div class=\"grid\">\n",
    );
    for (title, lines) in &charts {
        let _ = writeln!(
            body,
            "<figure><figcaption>{}</figcaption>{}</figure>",
            esc(title),
            chart(title, lines, scale)
        );
    }
    body.push_str("</div>\n");
    Some(Section {
        id: "calls",
        title: "By call (API-level trace)".into(),
        body,
    })
}
