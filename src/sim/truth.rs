//! The simulator's ground truth: what gpuledger must find in a simulated state.
//!
//! The model knows what no reader can see directly: which bytes on which fd mirror which
//! process's allocation, and whether they are pinned. [`expected`] turns that into the findings
//! the contract in docs/DESIGN.md ("Findings") promises with default thresholds, written beside
//! every simulated tree as `gpuledger-sim/truth.json` ([`crate::layout::SIM_TRUTH`]). The oracle
//! test (`tests/oracle.rs`) runs every view over sweeps of ranks, backing, visibility and time and
//! asserts that the findings equal this truth: no miss, no false positive, the same home.

use crate::findings::{Backing, Kind, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema of `truth.json`.
pub const SCHEMA: &str = "gpuledger.sim-truth/1";

/// Mirrored bytes at or above which a mirror must be reported: the contract's `peer.min_bytes`.
pub const REPORT_FLOOR: u64 = 256 << 20;

/// One mirror relation the model created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mirror {
    /// The process whose allocation is mirrored.
    pub pid: u32,
    /// Its rank, when it has one.
    pub rank: Option<u32>,
    /// Its home device (where it computes).
    pub home: String,
    /// The device whose allocation is mirrored.
    pub source: String,
    /// The device on whose fd the mirror is registered as host-class memory.
    pub peer: String,
    /// Mirrored bytes.
    pub bytes: u64,
    /// Whether the mirror is backed by pinned host pages.
    pub pinned: bool,
}

/// A finding gpuledger must report.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExpectedFinding {
    /// Kind.
    pub kind: Kind,
    /// Severity.
    pub severity: Severity,
    /// The process.
    pub pid: Option<u32>,
    /// Its rank.
    pub rank: Option<u32>,
    /// The device whose allocation is mirrored: the process's home when its allocation is among
    /// those mirrored on the peer, else the lowest PCI id among them.
    pub device: Option<String>,
    /// The device holding the mirror.
    pub peer: Option<String>,
    /// Backing.
    pub backing: Option<BackingTruth>,
    /// Mirrored bytes.
    pub bytes: u64,
}

/// [`Backing`] with an order, for sorted comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackingTruth {
    /// Backed by pinned host pages.
    Pinned,
    /// Bookkeeping only.
    NotPinned,
}

impl BackingTruth {
    /// The backing a finding carries.
    pub fn backing(self) -> Backing {
        match self {
            BackingTruth::Pinned => Backing::Pinned,
            BackingTruth::NotPinned => Backing::NotPinned,
        }
    }
}

/// The truth of one simulated state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    /// [`SCHEMA`].
    pub schema: String,
    /// Scenario name.
    pub scenario: String,
    /// Seconds into the run.
    pub t_s: f64,
    /// Whether the job runs.
    pub job_running: bool,
    /// Whether it died of host-memory exhaustion.
    pub died: bool,
    /// Host bytes the GPU driver pins (what driver-held host memory must be).
    pub driver_held: u64,
    /// The most severe `driver_held_host` finding allowed, where the truth bounds it: `info`
    /// while an integrated GPU's working memory is all that lifts driver-held memory over the
    /// finding's floor (an integrated GPU's memory is its VRAM, not a blowup).
    #[serde(default)]
    pub driver_held_ceiling: Option<Severity>,
    /// Every mirror, even those below [`REPORT_FLOOR`].
    pub mirrors: Vec<Mirror>,
    /// The findings to report, sorted.
    pub findings: Vec<ExpectedFinding>,
}

/// `base` with `mirrors` and the findings they call for: one peer_mirror per process and
/// mirroring device whose mirrored bytes reach [`REPORT_FLOOR`]; and, once the job has died of
/// host-memory exhaustion, one critical `kernel_page_alloc_failure` per process of the job in
/// `failed` (the kernel log keeps them after the processes are gone).
pub fn expected(mut base: Truth, mirrors: Vec<Mirror>, failed: &[u32]) -> Truth {
    let mut by_peer: BTreeMap<(u32, &str), Vec<&Mirror>> = BTreeMap::new();
    for m in &mirrors {
        by_peer.entry((m.pid, m.peer.as_str())).or_default().push(m);
    }
    let mut findings: Vec<ExpectedFinding> =
        by_peer.values().filter_map(|ms| finding(ms)).collect();
    findings.extend(failed.iter().map(|&pid| ExpectedFinding {
        kind: Kind::KernelPageAllocFailure,
        severity: Severity::Critical,
        pid: Some(pid),
        rank: None,
        device: None,
        peer: None,
        backing: None,
        bytes: 4096,
    }));
    findings.sort();
    base.findings = findings;
    base.mirrors = mirrors;
    base
}

fn finding(ms: &[&Mirror]) -> Option<ExpectedFinding> {
    let first = ms.first()?;
    let bytes: u64 = ms.iter().map(|m| m.bytes).sum();
    if bytes < REPORT_FLOOR {
        return None;
    }
    let device = ms
        .iter()
        .find(|m| m.source == m.home)
        .or_else(|| ms.iter().min_by(|a, b| a.source.cmp(&b.source)))
        .map(|m| m.source.clone());
    let backing = if ms.iter().all(|m| m.pinned) {
        BackingTruth::Pinned
    } else {
        BackingTruth::NotPinned
    };
    Some(ExpectedFinding {
        kind: Kind::PeerMirror,
        severity: backing.backing().severity(),
        pid: Some(first.pid),
        rank: first.rank,
        device,
        peer: Some(first.peer.clone()),
        backing: Some(backing),
        bytes,
    })
}
