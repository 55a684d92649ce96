//! `show` of several recordings of one job (one per node): the worst node, per-rank peaks
//! across nodes, each node's host counters and how it ended, and every finding with its node.

use super::safe_text::{display_safe, safe};
use super::show::held_text;
use super::table::{finding_row, group_text};
use super::text_table::{render_fit, Align, Paint};
use super::{verdict, wrap};
use crate::findings::group::{groups, Member};
use crate::findings::verdict::Verdict;
use crate::timeline::JobSet;
use crate::units::{human_bytes, human_opt};
use serde::Serialize;
use std::borrow::Cow;

/// Plain text, 80 columns, many findings of one kind grouped.
pub fn render_text(set: &JobSet) -> String {
    render_text_detail(set, Paint::PLAIN, false)
}

/// Text fitted to `paint`'s width; `each` lists every finding instead of folding many of one
/// kind and severity into a group line (`-v`).
pub fn render_text_detail(set: &JobSet, paint: Paint, each: bool) -> String {
    let width = paint.width;
    let found = set.findings();
    let v = Verdict::of(
        found
            .iter()
            .map(|f| (f.severity(), f.finding.peak.kind.as_str())),
    );
    let worst = set.worst_node().map(|n| &n.summary);
    let context = format!(
        "driver-held peak {}, MemAvailable low {}",
        human_opt(worst.and_then(|s| s.driver_held_bytes())),
        human_opt(worst.and_then(|s| s.mem_available_low))
    );
    let mut out = verdict::line(&v, &context, paint);
    let names: Vec<Cow<str>> = set.nodes.iter().map(|n| display_safe(&n.node)).collect();
    out.push('\n');
    out.push_str(&wrap::paragraph(
        "",
        &format!(
            "Job of {} recordings (nodes {})",
            set.nodes.len(),
            names.join(", ")
        ),
        width,
    ));
    if let Some(w) = &set.warning {
        out.push_str(&wrap::paragraph(
            "  ",
            &format!("warning: {}", display_safe(w)),
            width,
        ));
    }
    if let Some(n) = set.worst_node() {
        let s = &n.summary;
        let worst = s.worst_finding_text();
        let text = format!(
            "worst node  {}: {worst}; driver-held peak {}; MemAvailable low {}",
            display_safe(&n.node),
            held_text(s.driver_held_peak),
            human_opt(s.mem_available_low)
        );
        out.push_str(&wrap::paragraph("  ", &text, width));
    }
    out.push_str("\nPer-rank peaks across nodes (resident)\n");
    let rows: Vec<Vec<String>> = set
        .rank_peaks()
        .into_iter()
        .map(|r| {
            vec![
                r.rank.map_or("-".into(), |x| x.to_string()),
                safe(&r.node),
                r.pid.to_string(),
                human_bytes(r.device_local),
                human_bytes(r.host),
                human_bytes(r.peer_host),
            ]
        })
        .collect();
    out.push_str(&render_fit(
        "  ",
        &[
            ("RANK", Align::Right),
            ("NODE", Align::Wrap),
            ("PID", Align::Right),
            ("LOCAL", Align::Right),
            ("HOST", Align::Right),
            ("ON PEERS", Align::Right),
        ],
        &rows,
        width,
    ));
    out.push_str("\nNodes\n");
    let rows: Vec<Vec<String>> = set
        .nodes
        .iter()
        .map(|n| {
            let s = &n.summary;
            vec![
                safe(&n.node),
                safe(&n.file),
                format!("{:.1} s", s.duration_s),
                held_text(s.driver_held_peak),
                human_opt(s.mem_available_low),
                s.job_end.to_string(),
            ]
        })
        .collect();
    out.push_str(&render_fit(
        "  ",
        &[
            ("NODE", Align::Wrap),
            ("FILE", Align::Fold),
            ("DURATION", Align::Right),
            ("DRIVER-HELD PEAK", Align::Wrap),
            ("MEMAVAILABLE LOW", Align::Right),
            ("JOB END", Align::Wrap),
        ],
        &rows,
        width,
    ));
    out.push_str("\nFindings (with their node)\n");
    if found.is_empty() {
        out.push_str("  none\n");
    }
    for g in groups(&found) {
        if g.folded() && !each {
            let text = format!("{}: {}", g.kind.as_str(), group_text(&g, "peers"));
            out.push_str(&finding_row(paint, g.severity, &text));
            continue;
        }
        for f in g.findings {
            let r = &f.finding;
            let worse = if r.worst_severity > r.peak.severity {
                format!(
                    " ({} at another moment, {} at the peak)",
                    r.worst_severity.as_str(),
                    r.peak.severity.as_str()
                )
            } else {
                String::new()
            };
            let text = format!(
                "[{}] {}{worse}: {}",
                display_safe(&f.node),
                r.peak.kind.as_str(),
                display_safe(&r.peak.message)
            );
            out.push_str(&finding_row(paint, f.severity(), &text));
        }
    }
    out
}

#[derive(Serialize)]
struct JobJson<'a> {
    schema: &'static str,
    warning: Option<&'a str>,
    worst_node: Option<&'a str>,
    rank_peaks: Vec<crate::timeline::RankPeak>,
    findings: Vec<crate::timeline::NodeFinding>,
    nodes: &'a [crate::timeline::NodeRun],
}

/// JSON (`gpuledger.show-job/1`): the merged view and each node's full summary.
pub fn render_json(set: &JobSet) -> String {
    let doc = JobJson {
        schema: "gpuledger.show-job/1",
        warning: set.warning.as_deref(),
        worst_node: set.worst_node().map(|n| n.node.as_str()),
        rank_peaks: set.rank_peaks(),
        findings: set.findings(),
        nodes: &set.nodes,
    };
    serde_json::to_string_pretty(&doc).expect("plain data") + "\n"
}
