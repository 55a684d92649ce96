//! Findings grouped for people: one line per kind and severity when a machine has many of one
//! shape (64 ranks × 63 peers of `peer_mirror` is 4,032 findings of one fact). JSON and metrics
//! keep every finding; the table, `show` and `top` print groups unless asked to list each.

use super::{Finding, Kind, Severity};
use std::collections::BTreeSet;

/// More findings of one kind and severity than this are printed as one group line.
pub const GROUP_AT: usize = 4;

/// Findings of one kind and severity.
#[derive(Debug)]
pub struct Group<'a> {
    /// Kind.
    pub kind: Kind,
    /// Severity.
    pub severity: Severity,
    /// Its findings, in the order given.
    pub findings: Vec<&'a Finding>,
}

impl Group<'_> {
    /// Whether it is printed as one line.
    pub fn folded(&self) -> bool {
        self.findings.len() > GROUP_AT
    }

    /// Distinct processes and distinct peer devices the findings name.
    pub fn shape(&self) -> (usize, usize) {
        let pids: BTreeSet<u32> = self.findings.iter().filter_map(|f| f.pid).collect();
        let peers: BTreeSet<&str> = self
            .findings
            .iter()
            .filter_map(|f| f.peer.as_deref())
            .collect();
        (pids.len(), peers.len())
    }

    /// The median and the sum of the findings' bytes.
    pub fn bytes(&self) -> (u64, u64) {
        let mut b: Vec<u64> = self.findings.iter().map(|f| f.bytes).collect();
        b.sort_unstable();
        let total = b.iter().fold(0u64, |a, x| a.saturating_add(*x));
        (b.get(b.len() / 2).copied().unwrap_or(0), total)
    }
}

/// Groups `findings` by kind and severity, in the order of each group's first finding (findings
/// come most severe first, so groups do too).
pub fn groups(findings: &[Finding]) -> Vec<Group<'_>> {
    let mut out: Vec<Group> = Vec::new();
    for f in findings {
        match out
            .iter_mut()
            .find(|g| g.kind == f.kind && g.severity == f.severity)
        {
            Some(g) => g.findings.push(f),
            None => out.push(Group {
                kind: f.kind,
                severity: f.severity,
                findings: vec![f],
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirror(pid: u32, peer: &str, bytes: u64) -> Finding {
        Finding {
            kind: Kind::PeerMirror,
            severity: Severity::Critical,
            message: String::new(),
            pid: Some(pid),
            rank: None,
            device: None,
            peer: Some(peer.into()),
            bytes,
            ratio: None,
            backing: None,
            source: None,
            issue: None,
        }
    }

    #[test]
    fn sixty_four_ranks_by_sixty_three_peers_is_one_group() {
        let mut all = Vec::new();
        for r in 0..64u32 {
            for p in (0..64u32).filter(|p| *p != r) {
                all.push(mirror(r, &format!("dev{p}"), 10));
            }
        }
        let g = groups(&all);
        assert_eq!(g.len(), 1);
        assert!(g[0].folded());
        assert_eq!(g[0].findings.len(), 4032);
        assert_eq!(g[0].shape(), (64, 64));
        assert_eq!(g[0].bytes(), (10, 40_320));
    }

    #[test]
    fn a_few_findings_stay_listed() {
        let all = vec![mirror(1, "a", 1), mirror(2, "b", 2)];
        assert!(!groups(&all)[0].folded());
    }
}
