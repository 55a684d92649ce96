//! Timeline findings: stepwise_growth, plateau, leak, released_on_exit, device_oom, and
//! peer_mirror over time.

use super::shapes::tensor_shapes;
use crate::findings::{Finding, Kind, Severity};
use crate::ledger::MemClass;
use crate::recording::{name_of, ClassSeries, Hold, RecordedFinding, Recording};
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
    /// The stretch of samples whose level a series finding names (a plateau's hold, the hold
    /// a process released on exit).
    pub held: Option<Hold>,
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
    out.extend(super::device_oom::device_oom_findings(rec));
    if let Some(calls) = &rec.calls {
        let started_ms = rec.meta.get("started_ms").and_then(|v| v.parse().ok());
        out.extend(super::pinned::pinned_rounding(
            calls,
            started_ms.unwrap_or(0),
        ));
    }
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
        held: None,
    }
}

/// A recorded finding over its span, with the severity of its peak (what a snapshot of that
/// moment says); a worse severity seen earlier or later is named as such, never taken as the
/// finding's. A peer_mirror or own_card_mirror names its backing.
fn recorded(rec: &Recording, r: &RecordedFinding) -> TimelineFinding {
    let f = &r.peak;
    let backing = match (f.kind, f.backing) {
        (Kind::PeerMirror | Kind::OwnCardMirror, Some(b)) => format!(" (backing {}", name_of(b)),
        (Kind::PeerMirror | Kind::OwnCardMirror, None) => " (backing not known".to_string(),
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
        held: None,
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

/// Least growth before a hold for it to be a plateau.
const PLATEAU_GROWTH: u64 = 64 << 20;
/// Least share of the life a hold lasts to be a plateau.
const PLATEAU_SHARE: f64 = 0.25;
/// Least fall at the end of a life for the memory to count as released on exit.
const RELEASED_BYTES: u64 = 256 << 20;
/// Most share of the life the level after that fall may last (at least 2 samples).
const EXIT_TAIL_SHARE: f64 = 0.1;

/// The process, device and class one series' findings are about, and how to word them.
struct Subject<'a> {
    s: &'a ClassSeries,
    label: String,
    rank: Option<u32>,
    what: &'static str,
    first: usize,
    last: usize,
}

impl Subject<'_> {
    fn at(&self, kind: Kind, severity: Severity, message: String, bytes: u64) -> Finding {
        Finding {
            pid: Some(self.s.pid),
            rank: self.rank,
            device: Some(self.s.device.clone()),
            bytes,
            ..Finding::new(kind, severity, message)
        }
    }

    fn life(&self) -> usize {
        self.last - self.first + 1
    }

    fn lead(&self) -> String {
        format!("{}'s {} memory on {}", self.label, self.what, self.s.device)
    }
}

/// Findings of one class series, from its folded summary: the growths it counts (by more than
/// `MIN_STEP_BYTES` from one sample to the next within the process's life) and its holds, both
/// in sample indices of the filled-forward series, so a recording that stores points only on
/// change gives the same findings as one that stores every sample.
fn series_findings(rec: &Recording, s: &ClassSeries) -> Vec<TimelineFinding> {
    let Some(proc_) = rec.process(s.pid) else {
        return Vec::new();
    };
    let (first, last) = (proc_.first, proc_.last.min(rec.span.saturating_sub(1)));
    if last <= first {
        return Vec::new();
    }
    let (label, rank) = who(rec, s.pid);
    let what = if s.class == MemClass::Host {
        "host-class"
    } else {
        "device-local"
    };
    let sub = Subject {
        s,
        label,
        rank,
        what,
        first,
        last,
    };
    let mut out: Vec<TimelineFinding> = stepwise(rec, &sub).into_iter().collect();
    match plateau(rec, &sub) {
        Some(p) => out.push(p),
        None => out.extend(leak(rec, &sub)),
    }
    out.extend(released_at_exit(rec, &sub));
    out
}

fn stepwise(rec: &Recording, sub: &Subject) -> Option<TimelineFinding> {
    let (&step, n, first_at) = sub
        .s
        .steps
        .iter()
        .map(|(d, st)| (d, st.count, st.first))
        .max_by_key(|(d, n, _)| (*n, **d))?;
    if n < MIN_STEPS {
        return None;
    }
    let shapes = tensor_shapes(step);
    let shape = if shapes.is_empty() {
        String::new()
    } else {
        format!("; factors as {}", shapes.join(" or "))
    };
    let message = format!(
        "{} grew {n} times by exactly {} KiB ({step} bytes, {}){shape}: each step is one allocator segment",
        sub.lead(),
        step / 1024,
        human_bytes(step)
    );
    Some(TimelineFinding {
        finding: sub.at(Kind::StepwiseGrowth, Severity::Info, message, step),
        t_s: rec.t_s(first_at),
        worst_severity: None,
        held: None,
    })
}

/// The longest hold of the life, when the series rose to it, grew since the life began and the
/// hold lasted a quarter of the life: its level, from its first sample to its last. A level the
/// series fell to (what is left after a peak) is no plateau.
fn plateau(rec: &Recording, sub: &Subject) -> Option<TimelineFinding> {
    let (s, start) = (sub.s, sub.s.start);
    let h = s.longest.filter(|h| h.rose)?;
    let grown = h.value.checked_sub(start)?;
    let share = h.samples() as f64 / sub.life() as f64;
    if grown < PLATEAU_GROWTH || share < PLATEAU_SHARE || h.samples() < 2 {
        return None;
    }
    let message = format!(
        "{} held {} from {:.1} s to {:.1} s ({} of its {} samples), after growing {} from {}",
        sub.lead(),
        human_bytes(h.value),
        rec.t_s(h.from),
        rec.t_s(h.to),
        h.samples(),
        sub.life(),
        human_bytes(grown),
        human_bytes(start)
    );
    Some(TimelineFinding {
        finding: sub.at(Kind::Plateau, Severity::Info, message, h.value),
        t_s: rec.t_s(h.from),
        worst_severity: None,
        held: Some(h),
    })
}

/// Growth that never settled: many growths, the last of them in the final tenth of the life,
/// never a fall, and the process still there when the recording ended.
fn leak(rec: &Recording, sub: &Subject) -> Option<TimelineFinding> {
    let s = sub.s;
    let grown = s.end.saturating_sub(s.start);
    let still_running = sub.last + 1 >= rec.span;
    let last_up = s.last_up?;
    let flat_share = (sub.last - last_up) as f64 / (sub.last - sub.first) as f64;
    if s.ups < 2 || grown < PLATEAU_GROWTH || !still_running || flat_share > 0.1 || !s.monotone {
        return None;
    }
    let message = format!(
        "{} grew monotonically by {} to {} and was still growing when the recording ended: a leak, or a working set that never settles",
        sub.lead(),
        human_bytes(grown),
        human_bytes(s.end)
    );
    let severity = if s.class == MemClass::Host {
        Severity::Warning
    } else {
        Severity::Info
    };
    Some(TimelineFinding {
        finding: sub.at(Kind::Leak, severity, message, grown),
        t_s: rec.t_s(sub.first),
        worst_severity: None,
        held: None,
    })
}

/// A process that held memory until its last samples and gave it back as it ended: the life's
/// last hold is short (its final tenth, at least 2 samples) and lies [`RELEASED_BYTES`] or more
/// below the hold before it.
fn released_at_exit(rec: &Recording, sub: &Subject) -> Option<TimelineFinding> {
    let (before, end) = (sub.s.before_last?, sub.s.last_hold?);
    let released = before.value.checked_sub(end.value)?;
    let tail = ((sub.life() as f64 * EXIT_TAIL_SHARE) as usize).max(2);
    if released < RELEASED_BYTES || end.samples() > tail {
        return None;
    }
    let message = format!(
        "{} held {} from {:.1} s to {:.1} s and fell to {} as the process ended (last seen at {:.1} s): {} released on exit",
        sub.lead(),
        human_bytes(before.value),
        rec.t_s(before.from),
        rec.t_s(before.to),
        human_bytes(end.value),
        rec.t_s(end.to),
        human_bytes(released)
    );
    Some(TimelineFinding {
        finding: sub.at(Kind::ReleasedOnExit, Severity::Info, message, released),
        t_s: rec.t_s(end.from),
        worst_severity: None,
        held: Some(before),
    })
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
            held: None,
        }
    })
}
