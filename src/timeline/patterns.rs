//! Timeline findings: stepwise_growth, plateau, leak, released_on_exit, and peer_mirror over time.

use super::shapes::tensor_shapes;
use crate::findings::{Finding, Kind, Severity};
use crate::ledger::MemClass;
use crate::recording::{name_of, ClassSeries, RecordedFinding, Recording};
use crate::units::human_bytes;
use serde::{Serialize, Serializer};
use std::collections::BTreeSet;

/// One timeline finding: a [`Finding`] of a timeline kind (stepwise_growth, plateau, leak,
/// released_on_exit) or a recorded peer_mirror / known_issue over time, with when it happened.
/// `bytes` is the size concerned (the step, the plateau level, the growth, the released bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineFinding {
    /// The finding.
    pub finding: Finding,
    /// Seconds from the recording's start.
    pub t_s: f64,
    /// A worse severity the finding had at another moment of its span; text views show this one
    /// as the row's severity and say the peak's in the sentence.
    pub worst_severity: Option<Severity>,
}

/// How `show --json` spells a timeline finding (`gpuledger.show/1`).
#[derive(Serialize)]
struct TimelineFindingJson<'a> {
    kind: Kind,
    severity: Severity,
    message: &'a str,
    pid: Option<u32>,
    rank: Option<u32>,
    device: &'a Option<String>,
    bytes: u64,
    t_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    worst_severity: Option<Severity>,
}

impl Serialize for TimelineFinding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = &self.finding;
        TimelineFindingJson {
            kind: f.kind,
            severity: f.severity,
            message: &f.message,
            pid: f.pid,
            rank: f.rank,
            device: &f.device,
            bytes: f.bytes,
            t_s: self.t_s,
            worst_severity: self.worst_severity,
        }
        .serialize(s)
    }
}

/// Least number of repeats for a step size to count.
const MIN_STEPS: usize = 3;

/// Every timeline finding of a recording.
pub fn analyze(rec: &Recording) -> Vec<TimelineFinding> {
    let mut out = Vec::new();
    let keys: BTreeSet<(u32, String)> = rec
        .series
        .iter()
        .map(|s| (s.pid, s.device.clone()))
        .collect();
    for (pid, device) in keys {
        for class in [MemClass::Host, MemClass::Device] {
            if let Some(s) = rec.class_series(pid, &device, class) {
                out.extend(series_findings(rec, s));
            }
        }
    }
    out.extend(released_on_exit(rec));
    // Every recorded finding is on the timeline: known issues as matched, the others (the
    // peer-mirror pattern, driver-held host memory, host pressure, …) over the span they held.
    out.extend(
        rec.findings
            .iter()
            .filter(|f| f.peak.kind != Kind::KnownIssue)
            .map(|f| recorded(rec, f)),
    );
    out.extend(
        rec.findings
            .iter()
            .filter(|f| f.peak.kind == Kind::KnownIssue)
            .map(|f| known_issue(rec, f)),
    );
    out
}

/// A recorded known issue: when it first and last matched, at its worst severity (a match
/// turns critical once its finding appears, and that is what the recording proves).
fn known_issue(rec: &Recording, f: &RecordedFinding) -> TimelineFinding {
    let message = format!(
        "from {:.1} s to {:.1} s: {}",
        rec.t_s(f.first),
        rec.t_s(f.last),
        f.peak.message
    );
    TimelineFinding {
        finding: Finding::new(Kind::KnownIssue, f.worst_severity, message),
        t_s: rec.t_s(f.first),
        worst_severity: None,
    }
}

/// A recorded finding over its span, with the severity of its peak (what a snapshot of that
/// moment says); a worse severity seen earlier or later is named as such, never taken as the
/// finding's. A peer_mirror names its backing.
fn recorded(rec: &Recording, r: &RecordedFinding) -> TimelineFinding {
    let f = &r.peak;
    let backing = match (f.kind, f.backing) {
        (Kind::PeerMirror, Some(b)) => format!(" (backing {}", name_of(b)),
        (Kind::PeerMirror, None) => " (backing not known".to_string(),
        _ => String::new(),
    };
    let worst = if r.worst_severity > f.severity {
        format!(
            "{} {} at another moment of that span, {} at the peak",
            if backing.is_empty() { " (" } else { ";" },
            r.worst_severity.as_str(),
            f.severity.as_str()
        )
    } else {
        String::new()
    };
    let close = if backing.is_empty() && worst.is_empty() {
        ""
    } else {
        ")"
    };
    let message = format!(
        "from {:.1} s to {:.1} s, peak {}{backing}{worst}{close}: {}",
        rec.t_s(r.first),
        rec.t_s(r.last),
        human_bytes(f.bytes),
        f.message
    );
    TimelineFinding {
        finding: Finding {
            pid: f.pid,
            rank: f.rank,
            device: f.device.clone(),
            peer: f.peer.clone(),
            bytes: f.bytes,
            ..Finding::new(f.kind, f.severity, message)
        },
        t_s: rec.t_s(r.first),
        worst_severity: (r.worst_severity > f.severity).then_some(r.worst_severity),
    }
}

fn who(rec: &Recording, pid: u32) -> (String, Option<u32>) {
    let rank = rec.process(pid).and_then(|p| p.rank);
    let label = match rank {
        Some(r) => format!("rank {r} (pid {pid})"),
        None => format!(
            "pid {pid} ({})",
            rec.process(pid).map(|p| p.comm.as_str()).unwrap_or("?")
        ),
    };
    (label, rank)
}

/// Findings of one class series; the growths it counts (by more than `MIN_STEP_BYTES` from one
/// sample to the next within the process's life) were folded when the recording was read.
fn series_findings(rec: &Recording, s: &ClassSeries) -> Vec<TimelineFinding> {
    let (pid, device, class) = (s.pid, s.device.as_str(), s.class);
    let Some(proc_) = rec.process(pid) else {
        return Vec::new();
    };
    let (first, last) = (proc_.first, proc_.last.min(rec.span.saturating_sub(1)));
    if last <= first {
        return Vec::new();
    }
    let (label, rank) = who(rec, pid);
    let what = if class == MemClass::Host {
        "host-class"
    } else {
        "device-local"
    };
    let at = |kind, severity, message, bytes, t_s| TimelineFinding {
        finding: Finding {
            pid: Some(pid),
            rank,
            device: Some(device.to_string()),
            bytes,
            ..Finding::new(kind, severity, message)
        },
        t_s,
        worst_severity: None,
    };
    let mut out = Vec::new();
    if let Some((&step, n, first_at)) = s
        .steps
        .iter()
        .map(|(d, st)| (d, st.count, st.first))
        .max_by_key(|(d, n, _)| (*n, **d))
    {
        if n >= MIN_STEPS {
            let shapes = tensor_shapes(step);
            let shape = if shapes.is_empty() {
                String::new()
            } else {
                format!("; factors as {}", shapes.join(" or "))
            };
            out.push(at(
                Kind::StepwiseGrowth,
                Severity::Info,
                format!(
                    "{label}'s {what} memory on {device} grew {n} times by exactly {} KiB ({step} bytes, {}){shape}: each step is one allocator segment",
                    step / 1024,
                    human_bytes(step)
                ),
                step,
                rec.t_s(first_at),
            ));
        }
    }
    let (start, end) = (s.start, s.end);
    let grown = end.saturating_sub(start);
    if s.ups >= 2 && grown >= 64 << 20 {
        let last_up = s.last_up.unwrap_or(first);
        let span = (last - first) as f64;
        let flat_share = (last - last_up) as f64 / span.max(1.0);
        let still_running = last + 1 >= rec.span;
        if flat_share >= 0.25 {
            out.push(at(
                Kind::Plateau,
                Severity::Info,
                format!(
                    "{label}'s {what} memory on {device} plateaued at {} from {:.1} s (after growing {})",
                    human_bytes(end),
                    rec.t_s(last_up),
                    human_bytes(grown)
                ),
                end,
                rec.t_s(last_up),
            ));
        } else if still_running && flat_share <= 0.1 && s.monotone {
            out.push(at(
                Kind::Leak,
                if class == MemClass::Host { Severity::Warning } else { Severity::Info },
                format!(
                    "{label}'s {what} memory on {device} grew monotonically by {} to {} and was still growing when the recording ended: a leak, or a working set that never settles",
                    human_bytes(grown),
                    human_bytes(end)
                ),
                grown,
                rec.t_s(first),
            ));
        }
    }
    out
}

fn released_on_exit(rec: &Recording) -> Option<TimelineFinding> {
    let end_job = rec.processes.iter().map(|p| p.last).max()?;
    let (during, after) = rec.host.held_around_exit?;
    let released = during.saturating_sub(after);
    (released >= 256 << 20).then(|| {
        let message = format!(
            "{} of driver-held host memory came back when the job ended (peak {} during the job, {} after): the job's GPU clients held it",
            human_bytes(released),
            human_bytes(during),
            human_bytes(after)
        );
        TimelineFinding {
            finding: Finding {
                bytes: released,
                ..Finding::new(Kind::ReleasedOnExit, Severity::Info, message)
            },
            t_s: rec.t_s(end_job + 1),
            worst_severity: None,
        }
    })
}
