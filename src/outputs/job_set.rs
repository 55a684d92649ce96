//! `show` of several recordings of one job (one per node): the worst node, per-rank peaks
//! across nodes, each node's host counters and how it ended, and every finding with its node.

use super::safe_text::{display_safe, safe};
use super::show::held_text;
use super::text_table::{render, Align};
use crate::timeline::JobSet;
use crate::units::{human_bytes, human_opt};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write;

/// Plain text.
pub fn render_text(set: &JobSet) -> String {
    let names: Vec<Cow<str>> = set.nodes.iter().map(|n| display_safe(&n.node)).collect();
    let mut out = format!(
        "Job of {} recordings (nodes {})\n",
        set.nodes.len(),
        names.join(", ")
    );
    if let Some(w) = &set.warning {
        let _ = writeln!(out, "  warning: {}", display_safe(w));
    }
    if let Some(n) = set.worst_node() {
        let s = &n.summary;
        let worst = s.worst_finding_text();
        let _ = writeln!(
            out,
            "  worst node  {}: {worst}; driver-held peak {}; MemAvailable low {}",
            display_safe(&n.node),
            held_text(s.driver_held_peak),
            human_opt(s.mem_available_low)
        );
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
    out.push_str(&render(
        "  ",
        &[
            ("RANK", Align::Right),
            ("NODE", Align::Left),
            ("PID", Align::Right),
            ("LOCAL", Align::Right),
            ("HOST", Align::Right),
            ("ON PEERS", Align::Right),
        ],
        &rows,
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
    out.push_str(&render(
        "  ",
        &[
            ("NODE", Align::Left),
            ("FILE", Align::Left),
            ("DURATION", Align::Right),
            ("DRIVER-HELD PEAK", Align::Left),
            ("MEMAVAILABLE LOW", Align::Right),
            ("JOB END", Align::Left),
        ],
        &rows,
    ));
    out.push_str("\nFindings (with their node)\n");
    let found = set.findings();
    if found.is_empty() {
        out.push_str("  none\n");
    }
    for f in found {
        let _ = writeln!(
            out,
            "  {:<8}  [{}] {}: {}",
            f.finding.peak.severity.as_str().to_uppercase(),
            display_safe(&f.node),
            f.finding.peak.kind.as_str(),
            display_safe(&f.finding.peak.message)
        );
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
