//! Findings: pure functions of a [`Ledger`] that name a problem, carry the numbers that triggered it
//! and say in one sentence what to do.

mod evicted;
#[cfg(test)]
mod fixture;
pub mod group;
mod host;
pub mod kernel;
mod peer_mirror;
mod thresholds;
pub mod verdict;
pub mod window;

pub use thresholds::{ThresholdError, Thresholds};

use crate::ledger::{Ledger, Subject};
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

    /// The severity of an own-card mirror of this backing: at most a warning. Its bytes sit on
    /// the card's own fd, where a runtime's ordinary host buffers are accounted too, so the size
    /// match in a multi-device context (the residency mirror of intel/llvm#22873) cannot be told
    /// from a host copy the program made. Pinned, it holds real RAM and is likely to hurt; when
    /// that RAM runs short, `host_pressure` is the finding that says so.
    pub fn own_card_severity(self) -> Severity {
        match self {
            Backing::Pinned => Severity::Warning,
            Backing::Unknown | Backing::NotPinned => Severity::Info,
        }
    }
}

/// The kinds of finding: those of a snapshot (`analyze`, `kernel::find`, the known-issues base)
/// and those of a recording's timeline (`timeline::analyze`). Their order is the order findings
/// of one severity are shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Host-class memory on a peer device ≈ the process's VRAM working set.
    PeerMirror,
    /// Host-class memory on a card's own fd ≈ the process's VRAM there, in a context spanning
    /// several cards (the owning-card shape): no peer holds it, so it is not a peer mirror.
    OwnCardMirror,
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
    /// Timeline: growth in increments that repeat one size.
    StepwiseGrowth,
    /// Timeline: growth that stopped and stayed flat.
    Plateau,
    /// Timeline: growth until the end of the recording.
    Leak,
    /// Timeline: host memory that came back when the job ended.
    ReleasedOnExit,
    /// Timeline (traced): pinned host blocks a caching allocator rounded up to powers of two.
    PinnedRounding,
    /// Timeline: the job's output says an allocation on the GPU failed (`torch.OutOfMemoryError`,
    /// CUDA error 2, `UR_RESULT_ERROR_OUT_OF_RESOURCES`, …).
    DeviceOom,
    /// A kind this build does not know, read from a recording that a newer gpuledger wrote: kept
    /// (with its message) rather than refusing the whole recording.
    #[serde(other)]
    Unknown,
}

impl Kind {
    /// Every kind this build knows (not [`Kind::Unknown`]): the snapshot kinds, then the
    /// timeline kinds, as `--explain` lists them.
    pub const ALL: [Kind; 16] = [
        Kind::PeerMirror,
        Kind::OwnCardMirror,
        Kind::DriverHeldHost,
        Kind::HostPressure,
        Kind::EvictedToHost,
        Kind::OverReported,
        Kind::KnownIssue,
        Kind::KernelPageAllocFailure,
        Kind::KernelOomKill,
        Kind::KernelGpuError,
        Kind::StepwiseGrowth,
        Kind::Plateau,
        Kind::Leak,
        Kind::ReleasedOnExit,
        Kind::PinnedRounding,
        Kind::DeviceOom,
    ];

    /// snake_case name (the serde name: how JSON and recordings spell it).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PeerMirror => "peer_mirror",
            Kind::OwnCardMirror => "own_card_mirror",
            Kind::DriverHeldHost => "driver_held_host",
            Kind::HostPressure => "host_pressure",
            Kind::EvictedToHost => "evicted_to_host",
            Kind::OverReported => "over_reported",
            Kind::KnownIssue => "known_issue",
            Kind::KernelPageAllocFailure => "kernel_page_alloc_failure",
            Kind::KernelOomKill => "kernel_oom_kill",
            Kind::KernelGpuError => "kernel_gpu_error",
            Kind::StepwiseGrowth => "stepwise_growth",
            Kind::Plateau => "plateau",
            Kind::Leak => "leak",
            Kind::ReleasedOnExit => "released_on_exit",
            Kind::PinnedRounding => "pinned_rounding",
            Kind::DeviceOom => "device_oom",
            Kind::Unknown => "unknown",
        }
    }

    /// The names `--explain` accepts: every known kind's [`Kind::as_str`].
    pub fn names() -> [&'static str; 16] {
        Kind::ALL.map(Kind::as_str)
    }

    /// Parses the snake_case name of a known kind.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What the finding means and what to do, for `--explain`.
    pub fn explain(self) -> &'static str {
        match self {
            Kind::PeerMirror => include_str!("explain/peer_mirror.txt"),
            Kind::OwnCardMirror => include_str!("explain/own_card_mirror.txt"),
            Kind::DriverHeldHost => include_str!("explain/driver_held_host.txt"),
            Kind::HostPressure => include_str!("explain/host_pressure.txt"),
            Kind::EvictedToHost => include_str!("explain/evicted_to_host.txt"),
            Kind::OverReported => include_str!("explain/over_reported.txt"),
            Kind::KnownIssue => include_str!("explain/known_issue.txt"),
            Kind::KernelPageAllocFailure => include_str!("explain/kernel_page_alloc_failure.txt"),
            Kind::KernelOomKill => include_str!("explain/kernel_oom_kill.txt"),
            Kind::KernelGpuError => include_str!("explain/kernel_gpu_error.txt"),
            Kind::StepwiseGrowth => include_str!("explain/stepwise_growth.txt"),
            Kind::Plateau => include_str!("explain/plateau.txt"),
            Kind::Leak => include_str!("explain/leak.txt"),
            Kind::ReleasedOnExit => include_str!("explain/released_on_exit.txt"),
            Kind::PinnedRounding => include_str!("explain/pinned_rounding.txt"),
            Kind::DeviceOom => include_str!("explain/device_oom.txt"),
            Kind::Unknown => include_str!("explain/unknown.txt"),
        }
    }
}

/// What a finding kind (snapshot or timeline, by its snake_case name) means and what to do.
pub fn explain(name: &str) -> Option<&'static str> {
    Kind::parse(name).map(Kind::explain)
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
    /// The device concerned (peer_mirror, own_card_mirror: the one whose memory is mirrored).
    pub device: Option<String>,
    /// The peer device, the one holding the mirror (peer_mirror).
    pub peer: Option<String>,
    /// The bytes that triggered it.
    pub bytes: u64,
    /// bytes / reference (peer_mirror: / the VRAM it mirrors; own_card_mirror: / the card's own
    /// VRAM; driver_held_host: share explained per fd).
    pub ratio: Option<f64>,
    /// peer_mirror and own_card_mirror backing.
    pub backing: Option<Backing>,
    /// The host counter used as evidence.
    pub source: Option<String>,
    /// known_issue: the id of the matching entry of the known-issues base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
}

impl Finding {
    /// A finding of `kind` that names no process, device or evidence yet (set those with struct
    /// update syntax).
    pub fn new(kind: Kind, severity: Severity, message: String) -> Finding {
        Finding {
            kind,
            severity,
            message,
            pid: None,
            rank: None,
            device: None,
            peer: None,
            bytes: 0,
            ratio: None,
            backing: None,
            source: None,
            issue: None,
        }
    }
}

impl Subject for Finding {
    fn subject_pid(&self) -> Option<u32> {
        self.pid
    }

    fn subject_devices(&self) -> [Option<&str>; 2] {
        [self.device.as_deref(), self.peer.as_deref()]
    }
}

/// Every finding for a ledger, most severe first.
pub fn analyze(ledger: &Ledger, t: &Thresholds) -> Vec<Finding> {
    let mut out = peer_mirror::find(ledger, t);
    let mirrored = out.iter().any(|f| f.kind == Kind::PeerMirror);
    out.extend(host::driver_held(ledger, t, mirrored));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_kind_has_its_own_explanation_and_name() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
            assert!(k.explain().starts_with(k.as_str()), "{k:?}");
            assert_eq!(explain(k.as_str()), Some(k.explain()));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(Kind::names().len(), Kind::ALL.len());
        assert!(!Kind::names().contains(&"unknown"));
        assert_eq!(Kind::parse("unknown"), None);
        assert_eq!(explain("peer-mirror"), None);
    }

    #[test]
    fn a_kind_this_build_does_not_know_deserializes_as_unknown() {
        let k: Kind = serde_json::from_str("\"peer_mirror_v9\"").unwrap();
        assert_eq!(k, Kind::Unknown);
        assert!(Kind::Unknown.explain().starts_with("unknown"));
    }

    #[test]
    fn findings_rank_most_severe_first_then_by_kind() {
        let f = |kind, severity| Finding::new(kind, severity, String::new());
        let mut all = vec![
            f(Kind::HostPressure, Severity::Warning),
            f(Kind::EvictedToHost, Severity::Info),
            f(Kind::PeerMirror, Severity::Warning),
            f(Kind::DriverHeldHost, Severity::Critical),
        ];
        rank(&mut all);
        let order: Vec<Kind> = all.iter().map(|x| x.kind).collect();
        assert_eq!(
            order,
            [
                Kind::DriverHeldHost,
                Kind::PeerMirror,
                Kind::HostPressure,
                Kind::EvictedToHost
            ]
        );
        assert_eq!(worst(&all), Some(Severity::Critical));
        assert_eq!(worst(&[]), None);
    }
}
