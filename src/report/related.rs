//! "Possibly related": the entries of the known-issues base that match the machine and the
//! findings of the snapshot and the recordings, written for the maintainer who reads the report.

use super::escape::text;
use crate::knowledge::{Assessment, Match, NextStep};
use std::fmt::Write;

/// The section's body: one item per match, with why it matches and the workaround's caveat,
/// then the entries for these devices that did not match and why (often: no runtime version
/// was found, which the reader can supply).
pub(super) fn related(a: &Assessment) -> String {
    let mut out = String::new();
    if a.matches.is_empty() {
        out.push_str(
            "No entry of gpuledger's known-issues base matches this machine's versions, devices \
             and findings.\n",
        );
    }
    for m in &a.matches {
        matched(&mut out, m);
    }
    if let Some(step) = &a.next_step {
        next_step(&mut out, step);
    }
    if !a.not_matched.is_empty() {
        out.push_str("\nEntries for these devices that do not match, and why:\n\n");
        for n in &a.not_matched {
            let _ = writeln!(out, "- `{}`: {}", n.id, text(&n.reason));
        }
    }
    out
}

fn matched(out: &mut String, m: &Match) {
    // Links come from the base compiled into gpuledger, not from the machine.
    let _ = writeln!(
        out,
        "- **{}** `{}`: {} ({})",
        m.severity.as_str(),
        m.id,
        text(&m.title),
        m.links.join(", ")
    );
    let _ = writeln!(out, "  - matches because: {}", text(&m.facts.join("; ")));
    for w in &m.workarounds {
        let _ = writeln!(
            out,
            "  - workaround: {} (caveat: {})",
            text(&w.what),
            text(&w.caveat)
        );
    }
    let _ = writeln!(out, "  - upstream status: {}", m.status);
}

/// The one thing to try first over all matches, how to measure it, and the alternatives: the
/// words doctor and the findings use ([`NextStep`]).
fn next_step(out: &mut String, step: &NextStep) {
    let _ = writeln!(
        out,
        "\n**Next step** (from `{}`): {} (caveat: {})",
        step.issue,
        text(&step.first.what),
        text(&step.first.caveat)
    );
    if let Some(m) = &step.first.measured {
        let _ = writeln!(out, "  - measured: {}", text(&m.sentence()));
    }
    if let Some(cmd) = &step.experiment {
        let _ = writeln!(out, "  - measure it: `{}`", cmd.replace('`', "'"));
    }
    for alt in &step.alternatives {
        let _ = writeln!(
            out,
            "  - then: {} (`{}`; caveat: {})",
            text(&alt.workaround.what),
            alt.issue,
            text(&alt.workaround.caveat)
        );
    }
}

/// The ids of the matches, for the issue form's "searched for similar issues" line.
pub(super) fn ids(a: &Assessment) -> String {
    match (a.matches.is_empty(), a.not_matched.len()) {
        (true, 0) => "none in gpuledger's known-issues base".into(),
        (true, n) => format!(
            "none confirmed by gpuledger's known-issues base; {n} concern these devices, see \
             \"Possibly related\""
        ),
        (false, _) => {
            let ids: Vec<&str> = a.matches.iter().map(|m| m.id.as_str()).collect();
            format!("see \"Possibly related\": {}", ids.join(", "))
        }
    }
}
