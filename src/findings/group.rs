//! Findings grouped for people: one line per kind and severity when a machine has many of one
//! shape (64 ranks × 63 peers of `peer_mirror` is 4,032 findings of one fact). JSON and metrics
//! keep every finding; the table, `show`, `report` and `top` print groups unless asked to list
//! each.

use super::{Finding, Kind, Severity};
use std::collections::BTreeSet;

/// More findings of one kind and severity than this are printed as one group line.
pub const GROUP_AT: usize = 4;

/// What grouping needs of a finding: snapshot findings here, a recording's timeline and node
/// findings in `timeline`.
pub trait Member {
    /// The kind type.
    type Kind: Copy + Ord;
    /// Kind.
    fn kind(&self) -> Self::Kind;
    /// Severity as the row shows it.
    fn severity(&self) -> Severity;
    /// Pid.
    fn pid(&self) -> Option<u32>;
    /// The other device the finding concerns (a mirror's peer, else its device).
    fn peer(&self) -> Option<&str>;
    /// Bytes.
    fn bytes(&self) -> u64;
}

impl Member for Finding {
    type Kind = Kind;
    fn kind(&self) -> Kind {
        self.kind
    }
    fn severity(&self) -> Severity {
        self.severity
    }
    fn pid(&self) -> Option<u32> {
        self.pid
    }
    fn peer(&self) -> Option<&str> {
        self.peer.as_deref()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Findings of one kind and severity.
#[derive(Debug)]
pub struct Group<'a, T: Member> {
    /// Kind.
    pub kind: T::Kind,
    /// Severity.
    pub severity: Severity,
    /// Its findings, by pid.
    pub findings: Vec<&'a T>,
}

impl<T: Member> Group<'_, T> {
    /// Whether it is printed as one line.
    pub fn folded(&self) -> bool {
        self.findings.len() > GROUP_AT
    }

    /// Distinct processes and distinct peer devices (devices, for timeline findings) the
    /// findings name.
    pub fn shape(&self) -> (usize, usize) {
        let pids: BTreeSet<u32> = self.findings.iter().filter_map(|f| f.pid()).collect();
        let peers: BTreeSet<&str> = self.findings.iter().filter_map(|f| f.peer()).collect();
        (pids.len(), peers.len())
    }

    /// The median and the sum of the findings' bytes.
    pub fn bytes(&self) -> (u64, u64) {
        let mut b: Vec<u64> = self.findings.iter().map(|f| f.bytes()).collect();
        b.sort_unstable();
        let total = b.iter().fold(0u64, |a, x| a.saturating_add(*x));
        (b.get(b.len() / 2).copied().unwrap_or(0), total)
    }
}

/// Groups `findings` by kind and severity, most severe first, then by kind; each group's
/// findings by pid (the order every view shows).
pub fn groups<T: Member>(findings: &[T]) -> Vec<Group<'_, T>> {
    let mut sorted: Vec<&T> = findings.iter().collect();
    sorted.sort_by(|a, b| {
        b.severity()
            .cmp(&a.severity())
            .then(a.kind().cmp(&b.kind()))
            .then(a.pid().cmp(&b.pid()))
    });
    let mut out: Vec<Group<T>> = Vec::new();
    for f in sorted {
        match out.last_mut() {
            Some(g) if g.kind == f.kind() && g.severity == f.severity() => g.findings.push(f),
            _ => out.push(Group {
                kind: f.kind(),
                severity: f.severity(),
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
            pid: Some(pid),
            peer: Some(peer.into()),
            bytes,
            ..Finding::new(Kind::PeerMirror, Severity::Critical, String::new())
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
    fn groups_come_most_severe_first_and_list_by_pid() {
        let mut info = mirror(9, "a", 1);
        info.severity = Severity::Info;
        let all = vec![info, mirror(3, "b", 2), mirror(1, "c", 3)];
        let g = groups(&all);
        assert_eq!(g[0].severity, Severity::Critical);
        let pids: Vec<_> = g[0].findings.iter().map(|f| f.pid).collect();
        assert_eq!(pids, [Some(1), Some(3)]);
        assert_eq!(g[1].severity, Severity::Info);
    }

    #[test]
    fn a_few_findings_stay_listed() {
        let all = vec![mirror(1, "a", 1), mirror(2, "b", 2)];
        assert!(!groups(&all)[0].folded());
    }
}
