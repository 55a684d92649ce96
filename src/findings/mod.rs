//! Findings: pure functions of a [`Ledger`] that name a problem, carry the numbers that triggered it
//! and say in one sentence what to do.

mod evicted;
pub mod group;
mod host;
pub mod kernel;
mod peer_mirror;
mod thresholds;
pub mod verdict;

pub use thresholds::{ThresholdError, Thresholds};

use crate::ledger::Ledger;
use serde::{Deserialize, Serialize};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Likely to hurt.
    Warning,
    /// Hurting now.
    Critical,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// Whether host counters show peer-mirror bytes backed by pinned pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backing {
    /// Host evidence covers ≥ 50 % of the mirrored bytes.
    Pinned,
    /// Host evidence covers < 10 %.
    NotPinned,
    /// In between.
    Unknown,
}

impl Backing {
    /// The severity every view shows for a peer mirror of this backing.
    pub fn severity(self) -> Severity {
        match self {
            Backing::Pinned => Severity::Critical,
            Backing::Unknown => Severity::Warning,
            Backing::NotPinned => Severity::Info,
        }
    }
}

/// The kinds of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Host-class memory on a peer device ≈ the process's VRAM working set.
    PeerMirror,
    /// The GPU driver holds a large amount of host RAM.
    DriverHeldHost,
    /// Little host memory is available while GPU clients hold host memory.
    HostPressure,
    /// Device-local memory evicted to host RAM on the process's own device.
    EvictedToHost,
    /// Per-process VRAM sums exceed what the device reports in use.
    OverReported,
    /// The machine matches an entry of the known-issues base (`known-issues/`).
    KnownIssue,
    /// The kernel log shows a page-allocation failure (`kernel::find`).
    KernelPageAllocFailure,
    /// The kernel log shows an OOM kill.
    KernelOomKill,
    /// The kernel log shows a GPU driver error, reset or fault (NVIDIA Xid included).
    KernelGpuError,
}

impl Kind {
    /// All kinds, for `--explain` and docs.
    pub const ALL: [Kind; 9] = [
        Kind::PeerMirror,
        Kind::DriverHeldHost,
        Kind::HostPressure,
        Kind::EvictedToHost,
        Kind::OverReported,
        Kind::KnownIssue,
        Kind::KernelPageAllocFailure,
        Kind::KernelOomKill,
        Kind::KernelGpuError,
    ];

    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PeerMirror => "peer_mirror",
            Kind::DriverHeldHost => "driver_held_host",
            Kind::HostPressure => "host_pressure",
            Kind::EvictedToHost => "evicted_to_host",
            Kind::OverReported => "over_reported",
            Kind::KnownIssue => "known_issue",
            Kind::KernelPageAllocFailure => "kernel_page_alloc_failure",
            Kind::KernelOomKill => "kernel_oom_kill",
            Kind::KernelGpuError => "kernel_gpu_error",
        }
    }

    /// Parses a snake_case name.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What the finding means and what to do, for `--explain`.
    pub fn explain(self) -> &'static str {
        match self {
            Kind::PeerMirror => include_str!("explain/peer_mirror.txt"),
            Kind::DriverHeldHost => include_str!("explain/driver_held_host.txt"),
            Kind::HostPressure => include_str!("explain/host_pressure.txt"),
            Kind::EvictedToHost => include_str!("explain/evicted_to_host.txt"),
            Kind::OverReported => include_str!("explain/over_reported.txt"),
            Kind::KnownIssue => include_str!("explain/known_issue.txt"),
            Kind::KernelPageAllocFailure => include_str!("explain/kernel_page_alloc_failure.txt"),
            Kind::KernelOomKill => include_str!("explain/kernel_oom_kill.txt"),
            Kind::KernelGpuError => include_str!("explain/kernel_gpu_error.txt"),
        }
    }
}

/// Every finding kind `--explain` knows: the snapshot kinds, then the timeline kinds of `record`.
pub const EXPLAINED: [&str; 13] = [
    "peer_mirror",
    "driver_held_host",
    "host_pressure",
    "evicted_to_host",
    "over_reported",
    "known_issue",
    "kernel_page_alloc_failure",
    "kernel_oom_kill",
    "kernel_gpu_error",
    "stepwise_growth",
    "plateau",
    "leak",
    "released_on_exit",
];

/// What a finding kind (snapshot or timeline, by its snake_case name) means and what to do.
pub fn explain(name: &str) -> Option<&'static str> {
    if let Some(kind) = Kind::parse(name) {
        return Some(kind.explain());
    }
    Some(match name {
        "stepwise_growth" => include_str!("explain/stepwise_growth.txt"),
        "plateau" => include_str!("explain/plateau.txt"),
        "leak" => include_str!("explain/leak.txt"),
        "released_on_exit" => include_str!("explain/released_on_exit.txt"),
        _ => return None,
    })
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What it is.
    pub kind: Kind,
    /// How bad.
    pub severity: Severity,
    /// One sentence a user can act on.
    pub message: String,
    /// The process concerned.
    pub pid: Option<u32>,
    /// Its rank.
    pub rank: Option<u32>,
    /// Its home device (or the device concerned).
    pub device: Option<String>,
    /// The peer device (peer_mirror).
    pub peer: Option<String>,
    /// The bytes that triggered it.
    pub bytes: u64,
    /// bytes / reference (peer_mirror: / home VRAM; driver_held_host: share explained per fd).
    pub ratio: Option<f64>,
    /// peer_mirror backing.
    pub backing: Option<Backing>,
    /// The host counter used as evidence.
    pub source: Option<String>,
    /// known_issue: the id of the matching entry of the known-issues base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
}

/// Every finding for a ledger, most severe first.
pub fn analyze(ledger: &Ledger, t: &Thresholds) -> Vec<Finding> {
    let mut out = peer_mirror::find(ledger, t);
    out.extend(host::driver_held(ledger, t));
    out.extend(host::pressure(ledger, t));
    out.extend(evicted::find(ledger));
    out.extend(evicted::over_reported(ledger));
    rank(&mut out);
    out
}

/// Orders findings as every view shows them: most severe first, then by kind, then by pid.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.kind.cmp(&b.kind))
            .then(a.pid.cmp(&b.pid))
    });
}

/// The most severe finding's severity.
pub fn worst(findings: &[Finding]) -> Option<Severity> {
    findings.iter().map(|f| f.severity).max()
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}
