//! The nodes of a multi-node run: which node the page draws, and every node's driver-held peak,
//! MemAvailable low, worst finding and end, so the one drawn is seen among the others.

use super::page::{esc, Section};
use crate::timeline::JobSet;
use crate::units::human_opt;
use std::fmt::Write;

/// One table per run given as a set of nodes; `None` when no run was.
pub fn section(names: &[&str], sets: &[Option<&JobSet>]) -> Option<Section> {
    if sets.iter().all(Option::is_none) {
        return None;
    }
    let mut body = String::new();
    for ((name, set), letter) in names.iter().zip(sets).zip(["A", "B"]) {
        let Some(set) = set else { continue };
        let _ = writeln!(body, "<h3>{letter}: {}</h3>", esc(name));
        if let Some(w) = &set.warning {
            let _ = writeln!(body, "<p class=\"warning\">{}</p>", esc(w));
        }
        body.push_str("<table class=\"runs\">\n<tr><th>node</th><th>file</th><th>driver-held peak</th><th>MemAvailable low</th><th>worst finding</th><th>job end</th></tr>\n");
        for n in &set.nodes {
            let s = &n.summary;
            let worst = s.worst_finding_text();
            let _ = writeln!(
                body,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&n.node),
                esc(&n.file),
                human_opt(s.driver_held_bytes()),
                human_opt(s.mem_available_low),
                esc(&worst),
                esc(&s.job_end.to_string())
            );
        }
        body.push_str("</table>\n");
    }
    Some(Section {
        id: "nodes",
        title: "Nodes (the charts draw each run's worst node)".into(),
        body,
    })
}
