//! Timeline analysis of a recording: per-rank peaks, growth patterns and the bad-vs-good diff.

pub mod calls;
mod device_oom;
pub mod diff;
mod diff_row;
pub mod evidence;
mod evidence_rows;
mod group_members;
mod job_end;
mod job_set;
mod patterns;
pub mod pinned;
pub mod project;
pub mod ranks;
mod shapes;
mod summary;
pub mod view;

pub use evidence::EvidenceSummary;
pub use job_end::{JobEnd, KernelEvidence};
pub use job_set::{JobSet, NodeFinding, NodeRun, RankPeak};
pub use patterns::{analyze, TimelineFinding};
pub use shapes::tensor_shapes;
pub use summary::{Cadence, KernelLine, PeerHost, Registrations, RunSummary};

use crate::ledger::MemClass;
use crate::recording::Recording;
use std::collections::{BTreeMap, BTreeSet};

/// Peak resident bytes of one process on one device, by class.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Peak {
    /// Pid.
    pub pid: u32,
    /// Rank.
    pub rank: Option<u32>,
    /// Device.
    pub device: String,
    /// Peak device-local resident.
    pub device_local: u64,
    /// Peak host-class resident.
    pub host: u64,
    /// Whether this is the process's home device (most device-local at the peak).
    pub home: bool,
}

/// Per process × device peaks, home device marked.
pub fn peaks(rec: &Recording) -> Vec<Peak> {
    let mut keys: BTreeMap<(u32, String), ()> = BTreeMap::new();
    for s in &rec.series {
        keys.insert((s.pid, s.device.clone()), ());
    }
    let mut out: Vec<Peak> = keys
        .into_keys()
        .map(|(pid, device)| {
            let max = |c| rec.class_series(pid, &device, c).map_or(0, |s| s.peak);
            Peak {
                pid,
                rank: rec.process(pid).and_then(|p| p.rank),
                device_local: max(MemClass::Device),
                host: max(MemClass::Host),
                device,
                home: false,
            }
        })
        .collect();
    // `out` is in (pid, device) order: each process's peaks are one run.
    for run in out.chunk_by_mut(|a, b| a.pid == b.pid) {
        let home = run
            .iter()
            .filter(|p| p.device_local > 0)
            .max_by_key(|p| p.device_local)
            .map(|p| p.device.clone());
        for p in run.iter_mut() {
            p.home = home.as_deref() == Some(p.device.as_str());
        }
    }
    out.sort_by_key(|p| (p.rank.is_none(), p.rank, p.pid, p.device.clone()));
    out
}

/// Host-class bytes each rank holds on devices other than its home, at its peak (the seed's
/// "peer-fd drm-resident-gtt per rank").
pub fn peer_host_by_process(rec: &Recording) -> Vec<(u32, Option<u32>, u64)> {
    let all = peaks(rec);
    let mut by: BTreeMap<u32, (Option<u32>, u64)> = BTreeMap::new();
    let homed: BTreeSet<u32> = all.iter().filter(|q| q.home).map(|q| q.pid).collect();
    for p in &all {
        let e = by.entry(p.pid).or_insert((p.rank, 0));
        if !p.home && homed.contains(&p.pid) {
            e.1 += p.host;
        }
    }
    let mut out: Vec<(u32, Option<u32>, u64)> = by
        .into_iter()
        .map(|(pid, (rank, b))| (pid, rank, b))
        .collect();
    out.sort_by_key(|(pid, rank, _)| (rank.is_none(), *rank, *pid));
    out
}
