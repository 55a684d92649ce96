//! Pairing the processes and devices of two runs, and the per-rank comparison drawn from it.
//!
//! Processes pair by rank number; processes without a rank pair by their order of pid (the
//! first rank-less pid of A with the first of B, and so on). A process's devices pair by PCI slot
//! when both runs used the same slots, else by role: its home device with the other's home, then
//! its peers in slot order (a job moved from cards 3,4 to cards 5,6 still compares home with
//! home).

use super::{Peak, Registrations, RunSummary};
use crate::findings::{Backing, Kind, Severity};
use std::collections::{BTreeMap, BTreeSet};

/// Who a process is across runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Who {
    /// A process with this rank.
    Rank(u32),
    /// The n-th process without a rank, counted in pid order from 0.
    Unranked(usize),
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Rank(r) => write!(f, "rank {r}"),
            Who::Unranked(n) => write!(f, "unranked process {}", n + 1),
        }
    }
}

/// A device's part for one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The device where the process holds most device-local memory.
    Home,
    /// Any other device, numbered in slot order from 0.
    Peer(usize),
}

/// One device of a pair: the same slot in both runs, or the same role.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DevicePair {
    /// The device's role (in A where A has it, else in B).
    pub role: Role,
    /// PCI slot in each run, `None` where that run's process had no such device.
    pub slots: [Option<String>; 2],
}

/// One process of a pair and what it held, from its run's summary.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RankSide {
    /// Pid.
    pub pid: u32,
    /// Peak device-local resident bytes on its home device.
    pub device_local: u64,
    /// Peak host-class resident bytes on its home device.
    pub host_own: u64,
    /// Peak host-class resident bytes on its peer devices, summed over peers.
    pub host_peers: u64,
    /// What its peer-device registrations were (its peer_mirror findings, at their peaks).
    pub registrations: Registrations,
    /// Its findings, recorded and timeline, as (severity, kind), worst first.
    pub findings: Vec<(Severity, String)>,
}

/// One rank (or rank-less process) of the comparison.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RankPair {
    /// Who.
    pub who: Who,
    /// A's and B's process, `None` where that run had none.
    pub sides: [Option<RankSide>; 2],
    /// Its devices, home first.
    pub devices: Vec<DevicePair>,
}

impl Registrations {
    /// What a set of peer_mirror backings says: none, any pinned, all not pinned, or unknown.
    pub fn of(backings: &[Option<Backing>]) -> Registrations {
        if backings.is_empty() {
            Registrations::None
        } else if backings.contains(&Some(Backing::Pinned)) {
            Registrations::Pinned
        } else if backings.iter().all(|b| *b == Some(Backing::NotPinned)) {
            Registrations::NotPinned
        } else {
            Registrations::Unknown
        }
    }
}

/// Pids of a run by who they are.
fn who_of(s: &RunSummary) -> BTreeMap<Who, u32> {
    let pids: BTreeSet<(Option<u32>, u32)> = s.peaks.iter().map(|p| (p.rank, p.pid)).collect();
    let mut unranked = 0;
    pids.into_iter()
        .map(|(rank, pid)| match rank {
            Some(r) => (Who::Rank(r), pid),
            None => {
                unranked += 1;
                (Who::Unranked(unranked - 1), pid)
            }
        })
        .collect()
}

/// A process's devices with their roles: home first, then peers in slot order.
fn roles(s: &RunSummary, pid: u32) -> Vec<(Role, String)> {
    let mine: Vec<&Peak> = s.peaks.iter().filter(|p| p.pid == pid).collect();
    let home = mine
        .iter()
        .find(|p| p.home)
        .map(|p| (Role::Home, p.device.clone()));
    let mut peers: Vec<&str> = mine
        .iter()
        .filter(|p| !p.home)
        .map(|p| p.device.as_str())
        .collect();
    peers.sort_unstable();
    home.into_iter()
        .chain(
            peers
                .into_iter()
                .enumerate()
                .map(|(i, d)| (Role::Peer(i), d.to_string())),
        )
        .collect()
}

/// The devices of two processes paired by slot when they used the same slots, else by role.
fn pair_devices(a: &[(Role, String)], b: &[(Role, String)]) -> Vec<DevicePair> {
    let slots = |v: &[(Role, String)]| v.iter().map(|(_, d)| d.clone()).collect::<BTreeSet<_>>();
    if slots(a) == slots(b) {
        return a
            .iter()
            .map(|(role, d)| DevicePair {
                role: *role,
                slots: [Some(d.clone()), Some(d.clone())],
            })
            .collect();
    }
    let mut by: BTreeMap<Role, [Option<String>; 2]> = BTreeMap::new();
    for (side, list) in [a, b].into_iter().enumerate() {
        for (role, d) in list {
            by.entry(*role).or_default()[side] = Some(d.clone());
        }
    }
    by.into_iter()
        .map(|(role, slots)| DevicePair { role, slots })
        .collect()
}

/// What one process held and was found to do.
fn side(s: &RunSummary, pid: u32) -> RankSide {
    let mine = s.peaks.iter().filter(|p| p.pid == pid);
    let (home, peers): (Vec<&Peak>, Vec<&Peak>) = mine.partition(|p| p.home);
    let backings: Vec<Option<Backing>> = s
        .peer_mirrors()
        .filter(|f| f.peak.pid == Some(pid))
        .map(|f| f.peak.backing)
        .collect();
    let mut findings: Vec<(Severity, String)> = s
        .findings
        .iter()
        .map(|f| &f.peak)
        .filter(|f| f.pid == Some(pid))
        .chain(
            s.timeline
                .iter()
                .map(|f| &f.finding)
                // A timeline peer_mirror retells the recorded one over time: count it once.
                .filter(|f| f.pid == Some(pid) && f.kind != Kind::PeerMirror),
        )
        .map(|f| (f.severity, f.kind.as_str().to_string()))
        .collect();
    findings.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
    RankSide {
        pid,
        device_local: home.iter().map(|p| p.device_local).sum(),
        host_own: home.iter().map(|p| p.host).sum(),
        host_peers: peers.iter().map(|p| p.host).sum(),
        registrations: Registrations::of(&backings),
        findings,
    }
}

/// Pairs the ranks and devices of one or two runs (a single run pairs with nothing).
pub fn pair_ranks(runs: &[&RunSummary]) -> Vec<RankPair> {
    let whos: Vec<BTreeMap<Who, u32>> = runs.iter().map(|s| who_of(s)).collect();
    let all: BTreeSet<Who> = whos.iter().flat_map(|w| w.keys().copied()).collect();
    all.into_iter()
        .map(|who| {
            let pid = |i: usize| whos.get(i).and_then(|w| w.get(&who)).copied();
            let sides = [0, 1].map(|i| Some(side(runs.get(i)?, pid(i)?)));
            let dev = |i: usize| match (runs.get(i), pid(i)) {
                (Some(s), Some(p)) => roles(s, p),
                _ => Vec::new(),
            };
            let devices = pair_devices(&dev(0), &dev(1));
            RankPair {
                who,
                sides,
                devices,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::Recording;

    fn peak(pid: u32, rank: Option<u32>, device: &str, local: u64, host: u64, home: bool) -> Peak {
        Peak {
            pid,
            rank,
            device: device.into(),
            device_local: local,
            host,
            home,
        }
    }

    fn run(peaks: Vec<Peak>) -> RunSummary {
        let mut s = RunSummary::of(&Recording::default());
        s.peaks = peaks;
        s
    }

    #[test]
    fn different_slots_pair_home_with_home() {
        let a = run(vec![
            peak(10, Some(0), "0000:03:00.0", 18 << 30, 1 << 20, true),
            peak(10, Some(0), "0000:04:00.0", 0, 18 << 30, false),
        ]);
        let b = run(vec![
            peak(20, Some(0), "0000:06:00.0", 0, 2 << 30, false),
            peak(20, Some(0), "0000:05:00.0", 17 << 30, 0, true),
        ]);
        let pairs = pair_ranks(&[&a, &b]);
        assert_eq!(pairs.len(), 1);
        let p = &pairs[0];
        assert_eq!(p.who, Who::Rank(0));
        assert_eq!(
            p.devices,
            vec![
                DevicePair {
                    role: Role::Home,
                    slots: [Some("0000:03:00.0".into()), Some("0000:05:00.0".into())]
                },
                DevicePair {
                    role: Role::Peer(0),
                    slots: [Some("0000:04:00.0".into()), Some("0000:06:00.0".into())]
                },
            ]
        );
        let [Some(sa), Some(sb)] = &p.sides else {
            panic!("both runs have rank 0: {:?}", p.sides)
        };
        assert_eq!(
            (sa.pid, sa.device_local, sa.host_own, sa.host_peers),
            (10, 18 << 30, 1 << 20, 18 << 30)
        );
        assert_eq!(
            (sb.pid, sb.device_local, sb.host_own, sb.host_peers),
            (20, 17 << 30, 0, 2 << 30)
        );
    }

    #[test]
    fn same_slots_pair_by_slot_even_when_the_home_moved() {
        let a = run(vec![
            peak(10, Some(1), "0000:03:00.0", 8 << 30, 0, true),
            peak(10, Some(1), "0000:04:00.0", 1 << 30, 0, false),
        ]);
        let b = run(vec![
            peak(11, Some(1), "0000:03:00.0", 1 << 30, 0, false),
            peak(11, Some(1), "0000:04:00.0", 8 << 30, 0, true),
        ]);
        let devices = &pair_ranks(&[&a, &b])[0].devices;
        assert!(
            devices.iter().all(|d| d.slots[0] == d.slots[1]),
            "{devices:?}"
        );
    }

    #[test]
    fn rankless_processes_pair_in_pid_order_and_missing_sides_stay_empty() {
        let a = run(vec![
            peak(300, None, "d", 1, 0, true),
            peak(100, None, "d", 1, 0, true),
        ]);
        let b = run(vec![peak(200, None, "d", 1, 0, true)]);
        let pairs = pair_ranks(&[&a, &b]);
        let pids: Vec<[Option<u32>; 2]> = pairs
            .iter()
            .map(|p| [0, 1].map(|i| p.sides[i].as_ref().map(|s| s.pid)))
            .collect();
        assert_eq!(pids, vec![[Some(100), Some(200)], [Some(300), None]]);
        assert_eq!(pairs[1].who, Who::Unranked(1));
        assert_eq!(pairs[1].devices[0].slots, [Some("d".into()), None]);
    }

    #[test]
    fn registrations_of_backings() {
        use Backing::*;
        assert_eq!(Registrations::of(&[]), Registrations::None);
        assert_eq!(
            Registrations::of(&[Some(NotPinned), Some(Pinned)]),
            Registrations::Pinned
        );
        assert_eq!(
            Registrations::of(&[Some(NotPinned)]),
            Registrations::NotPinned
        );
        assert_eq!(
            Registrations::of(&[Some(NotPinned), None]),
            Registrations::Unknown
        );
    }
}
