//! Known issues as findings: the base matched against one machine, once, and then against each
//! sample's findings, so the snapshot, `serve`, `record` and `report` carry the same verdict.

use super::base::{Base, KnowledgeError};
use super::facts::Facts;
use super::matcher::{assess, group_step, groups, Assessment, Match};
use super::schema::Confidence;
use crate::findings::{rank, Finding, Kind};
use crate::root::Root;
use crate::snapshot::Snapshot;
use crate::sources::system_info;

/// The base and the facts of one machine (versions, devices), waiting for findings.
///
/// The job's environment is not part of it: the machine's view is that every device is visible.
/// `doctor -- CMD` reads a job's device masks.
#[derive(Debug, Clone)]
pub struct KnownIssues {
    base: Base,
    facts: Facts,
}

impl KnownIssues {
    /// The embedded base and the facts of the machine behind `root` as `snap` saw it. Versions
    /// come from `system_info` (package managers on the live machine, `var/lib/dpkg/status` in
    /// a capture tree, `/sys/module/*/version`, NVML); a machine without GPUs is not asked.
    pub fn of_machine(root: &Root, snap: &Snapshot) -> Result<KnownIssues, KnowledgeError> {
        Ok(KnownIssues::with_base(Base::installed(None)?, root, snap))
    }

    /// [`KnownIssues::of_machine`] with a base already loaded.
    pub fn with_base(base: Base, root: &Root, snap: &Snapshot) -> KnownIssues {
        let facts = if snap.devices.is_empty() && snap.nvml.is_empty() {
            Facts::default()
        } else {
            // The Python packages (torch) beside the GPU processes' interpreters.
            let pythons: Vec<u32> = snap
                .processes
                .iter()
                .filter(|p| p.comm.starts_with("python"))
                .map(|p| p.pid)
                .collect();
            let sys = system_info::gather(root, &pythons, &[]);
            Facts::of_machine(&base, root, snap, &sys, Vec::new()).0
        };
        KnownIssues { base, facts }
    }

    /// The embedded base and the facts of a recorded machine: the versions the recording kept
    /// (`sys`) and its devices, for a report that describes the recorded machine.
    pub fn of_recording(
        sys: &system_info::SystemInfo,
        devices: &[crate::sources::drm_devices::DeviceInfo],
    ) -> Result<KnownIssues, KnowledgeError> {
        let base = Base::installed(None)?;
        let facts = Facts::of_recording(&base, sys, devices);
        Ok(KnownIssues { base, facts })
    }

    /// The entries that apply, given the findings of a sample (their signatures make a match
    /// critical). Known-issue findings among `found` are not signatures.
    pub fn assess(&self, found: &[Finding]) -> Assessment {
        let mut facts = self.facts.clone();
        facts.findings = found
            .iter()
            .filter(|f| f.kind != Kind::KnownIssue)
            .cloned()
            .collect();
        assess(&self.base, &facts)
    }

    /// Adds the `known_issue` findings of the matching entries ([`findings`]) to `found` and
    /// re-ranks them.
    pub fn extend(&self, found: &mut Vec<Finding>) {
        found.extend(findings(&self.assess(found)));
        rank(found);
    }
}

/// The assessment's matches as findings, deduplicated: matches of one severity on the same
/// evidence (the signature, or an after-exit failure) are one finding, the strongest match's,
/// naming the others, its next step's alternatives taken from all of them. Matches on no
/// evidence are one finding each.
pub fn findings(a: &Assessment) -> Vec<Finding> {
    groups(&a.matches)
        .into_iter()
        .filter_map(|g| {
            let (first, rest) = g.split_first()?;
            let top = Match {
                next_step: group_step(g),
                ..first.clone()
            };
            let also: Vec<&str> = rest.iter().map(|m| m.id.as_str()).collect();
            Some(finding_also(&top, &also))
        })
        .collect()
}

/// A match as a finding: the entry, why it matches, what the reports leave suspected, the first
/// public report, and last the next step (the first workaround with its caveat and how to
/// measure it, then the alternatives).
pub fn finding(m: &Match) -> Finding {
    finding_also(m, &[])
}

/// [`finding`], naming the weaker matches on the same evidence (`also`).
fn finding_also(m: &Match, also: &[&str]) -> Finding {
    let mut message = format!("{} ({}): {}", m.id, m.title, m.facts.join("; "));
    let suspected: Vec<&str> = m
        .claims
        .iter()
        .filter(|c| c.confidence == Confidence::Suspected)
        .map(|c| c.claim.as_str())
        .collect();
    if !suspected.is_empty() {
        message.push_str(&format!(
            "; suspected, not confirmed: {}",
            suspected.join("; ")
        ));
    }
    if let Some(link) = m.links.first() {
        message.push_str(&format!("; see {link}"));
    }
    if !also.is_empty() {
        message.push_str(&format!(
            "; also matching on the same evidence: {}",
            also.join(", ")
        ));
    }
    if let Some(step) = &m.next_step {
        message.push_str(&format!("; next step: {}", step.sentence()));
    }
    Finding {
        issue: Some(m.id.clone()),
        ..Finding::new(Kind::KnownIssue, m.severity, message)
    }
}
