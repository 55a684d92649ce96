//! Each run's findings in full: severity, kind, when, how much and the sentence to act on.

use super::page::{esc, Section};
use super::Run;
use crate::units::human_bytes;
use std::fmt::Write;

/// One table per run.
pub fn section(runs: &[Run]) -> Section {
    let mut body = String::new();
    for (run, letter) in runs.iter().zip(["A", "B"]) {
        let _ = writeln!(
            body,
            "<h3>{letter}: {}</h3>\n<table class=\"findings\"><tr><th>severity</th><th>finding</th><th>at</th><th>bytes</th><th>message</th></tr>",
            esc(run.name)
        );
        for f in &run.summary.timeline {
            let sev = f.finding.severity.as_str();
            let _ = writeln!(
                body,
                "<tr class=\"{sev}\"><td><span class=\"sev {sev}\">{sev}</span></td><td>{}</td><td class=\"num\">{:.1} s</td><td class=\"num\">{}</td><td>{}</td></tr>",
                f.finding.kind.as_str(),
                f.t_s,
                human_bytes(f.finding.bytes),
                esc(&f.finding.message)
            );
        }
        body.push_str("</table>\n");
    }
    Section {
        id: "findings",
        title: "Findings over time".into(),
        body,
    }
}
