//! One summary of a recording, computed once and read by every view (show, diff, experiment,
//! plot, report), so that no two views can disagree about a peak, a severity or how a job ended.

use super::calls::{cross_check, CallCheck};
use super::job_end::JobEnd;
use super::{analyze, peaks, peer_host_by_process, Peak, TimelineFinding};
use crate::findings::{Backing, Kind};
use crate::ledger::DriverHeld;
use crate::recording::follow::LABEL_PREFIX;
use crate::recording::{CallTable, RecordedFinding, Recording};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Host-class bytes one process held on devices other than its home, at its peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PeerHost {
    /// Pid.
    pub pid: u32,
    /// Rank.
    pub rank: Option<u32>,
    /// Bytes.
    pub bytes: u64,
}

/// One kernel line of the recording's window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelLine {
    /// Seconds from the recording's start.
    pub t_s: f64,
    /// `page_allocation_failure`, `oom_kill` or `driver`.
    pub kind: String,
    /// The line.
    pub message: String,
}

/// What a run's peer-device registrations (its peer_mirror findings) were, at their peaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Registrations {
    /// No peer_mirror finding was recorded.
    None,
    /// At least one was backed by pinned pages.
    Pinned,
    /// All were not pinned: bookkeeping only.
    NotPinned,
    /// None pinned, but host counters could not rule it out for at least one.
    Unknown,
}

/// The samples a recording missed: the machine (or the recorder) was too busy to sample at the
/// interval asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cadence {
    /// Mean time between samples, ms.
    pub achieved_ms: u64,
    /// Samples the interval asked for over the recording's span that were not taken.
    pub missed: u64,
    /// The longest time between two consecutive samples, ms.
    pub longest_gap_ms: u64,
}

impl Cadence {
    /// Missed samples of `rec`, or `None` when every interval had its sample (a late sample
    /// within half an interval is not a missed one).
    pub fn of(rec: &Recording) -> Option<Cadence> {
        let interval: u64 = rec
            .meta
            .get("interval_ms")?
            .parse()
            .ok()
            .filter(|i| *i > 0)?;
        let span = rec.host.last_ms.saturating_sub(rec.host.first_ms);
        let taken = rec.host.samples;
        if taken < 2 {
            return None;
        }
        let asked = (span + interval / 2) / interval + 1;
        let missed = asked.saturating_sub(taken);
        (missed > 0).then(|| Cadence {
            achieved_ms: span / (taken - 1),
            missed,
            longest_gap_ms: rec.host.longest_gap_ms,
        })
    }
}

/// Everything the views show about one recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The recorded command.
    pub command: Vec<String>,
    /// A note the recorder left (the simulator says why a job died).
    pub note: Option<String>,
    /// (rank, pid) of every process with a rank.
    pub ranks: Vec<(u32, u32)>,
    /// Seconds from the first to the last sample.
    pub duration_s: f64,
    /// Samples.
    pub samples: u64,
    /// Sampling interval, where recorded.
    pub interval_ms: Option<u64>,
    /// How the samples actually came, where fewer came than the interval asked for.
    pub cadence: Option<Cadence>,
    /// Peaks per process × device.
    pub peaks: Vec<Peak>,
    /// Peer-device host-class bytes per process.
    pub peer_host: Vec<PeerHost>,
    /// MemAvailable low point.
    pub mem_available_low: Option<u64>,
    /// Driver-held host memory at its peak, with its parts (the ledger's definition).
    pub driver_held_peak: Option<DriverHeld>,
    /// GPUActive peak.
    pub gpu_active_peak: Option<u64>,
    /// Unaccounted residual peak.
    pub unaccounted_peak: Option<u64>,
    /// Findings as recorded, each with its severity at its peak.
    pub findings: Vec<RecordedFinding>,
    /// Timeline findings (growth patterns, release on exit, peer mirrors over time).
    pub timeline: Vec<TimelineFinding>,
    /// How the job ended.
    pub job_end: JobEnd,
    /// The first kernel lines.
    pub kernel: Vec<KernelLine>,
    /// Kernel lines by kind (`page_allocation_failure`, `oom_kill`, `driver`).
    pub kernel_counts: BTreeMap<String, usize>,
    /// The allow-listed environment of the first process that had one.
    pub env: BTreeMap<String, String>,
    /// Runtime package versions, where recorded.
    pub packages: BTreeMap<String, String>,
    /// `kernel` and `gpuledger version`, where recorded.
    pub versions: BTreeMap<String, String>,
    /// A followed job's labels (`slurm_job`, `user`, `node`, …), where recorded.
    pub labels: BTreeMap<String, String>,
    /// What the job's own output showed: error lines, tail, rates, markers.
    pub evidence: super::EvidenceSummary,
    /// The traced calls (`None` when the run was not traced).
    pub calls: Option<CallTable>,
    /// Each traced process's counters against its calls.
    pub call_checks: Vec<CallCheck>,
}

impl RunSummary {
    /// Summarises a recording.
    pub fn of(rec: &Recording) -> RunSummary {
        let peaks = peaks(rec);
        let call_checks = rec
            .calls
            .as_ref()
            .map(|c| cross_check(&peaks, c))
            .unwrap_or_default();
        RunSummary {
            command: rec.command(),
            note: rec.meta.get("note").cloned(),
            ranks: rec
                .processes
                .iter()
                .filter_map(|p| p.rank.map(|r| (r, p.pid)))
                .collect(),
            duration_s: rec.duration_s(),
            samples: rec.host.samples,
            interval_ms: rec.meta.get("interval_ms").and_then(|v| v.parse().ok()),
            cadence: Cadence::of(rec),
            peaks,
            peer_host: peer_host_by_process(rec)
                .into_iter()
                .map(|(pid, rank, bytes)| PeerHost { pid, rank, bytes })
                .collect(),
            mem_available_low: rec.host.mem_available_low,
            driver_held_peak: rec.host.driver_held_peak,
            gpu_active_peak: rec.host.gpu_active_peak,
            unaccounted_peak: rec.host.unaccounted_peak,
            findings: rec.findings.clone(),
            timeline: analyze(rec),
            job_end: JobEnd::of(rec),
            kernel: rec
                .kernel
                .iter()
                .map(|(i, kind, message)| KernelLine {
                    t_s: rec.t_s(*i),
                    kind: kind.clone(),
                    message: message.clone(),
                })
                .collect(),
            kernel_counts: rec.kernel_counts.clone(),
            env: rec
                .processes
                .iter()
                .find(|p| !p.env.is_empty())
                .map(|p| p.env.clone())
                .unwrap_or_default(),
            packages: rec
                .meta
                .get("packages")
                .and_then(|p| serde_json::from_str(p).ok())
                .unwrap_or_default(),
            versions: [
                ("kernel", "kernel"),
                ("gpuledger_version", "gpuledger version"),
            ]
            .into_iter()
            .filter_map(|(k, name)| rec.meta.get(k).map(|v| (name.to_string(), v.clone())))
            .collect(),
            labels: rec
                .meta
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix(LABEL_PREFIX)?.to_string(), v.clone())))
                .collect(),
            evidence: super::EvidenceSummary::of(rec),
            call_checks,
            calls: rec.calls.clone(),
        }
    }

    /// Number of kernel lines of a kind.
    pub fn kernel_count(&self, kind: &str) -> usize {
        self.kernel_counts.get(kind).copied().unwrap_or(0)
    }

    /// The most severe recorded finding (the first of the most severe kind order).
    pub fn worst_finding(&self) -> Option<&RecordedFinding> {
        self.findings
            .iter()
            .map(|f| (f, &f.peak))
            .max_by(|(_, a), (_, b)| a.severity.cmp(&b.severity).then(b.kind.cmp(&a.kind)))
            .map(|(f, _)| f)
    }

    /// "critical peer_mirror", or "none": the worst finding in a few words.
    pub fn worst_finding_text(&self) -> String {
        self.worst_finding()
            .map(|f| format!("{} {}", f.peak.severity.as_str(), f.peak.kind.as_str()))
            .unwrap_or_else(|| "none".into())
    }

    /// Driver-held bytes at the peak.
    pub fn driver_held_bytes(&self) -> Option<u64> {
        self.driver_held_peak.map(|d| d.bytes)
    }

    /// Peer-device host-class bytes over all processes.
    pub fn peer_host_total(&self) -> u64 {
        self.peer_host.iter().map(|p| p.bytes).sum()
    }

    /// The recorded peer_mirror findings.
    pub fn peer_mirrors(&self) -> impl Iterator<Item = &RecordedFinding> {
        self.findings
            .iter()
            .filter(|f| f.peak.kind == Kind::PeerMirror)
    }

    /// What the peer-device registrations were.
    pub fn registrations(&self) -> Registrations {
        let backings: Vec<Option<Backing>> = self.peer_mirrors().map(|f| f.peak.backing).collect();
        Registrations::of(&backings)
    }

    /// Number of distinct ranks among the processes that used a GPU.
    pub fn rank_count(&self) -> usize {
        self.peaks
            .iter()
            .filter_map(|p| p.rank)
            .collect::<BTreeSet<u32>>()
            .len()
    }
}
