//! `device_oom`: the job's output says an allocation on the GPU failed. The finding names the
//! layer, the bytes asked and the device when the line says them, and what held device memory on
//! the recording's samples at that moment, so "out of memory" comes with whose memory it was.

use super::patterns::TimelineFinding;
use crate::findings::{Finding, Kind, Severity};
use crate::job_output::{device_oom, DeviceOom};
use crate::ledger::MemClass;
use crate::recording::Recording;
use crate::units::human_bytes;

/// Holders named in the finding, most first.
const MAX_HOLDERS: usize = 4;

/// What said the allocation failed: a line of the job's output, or a traced call's return code.
enum Source {
    Output(DeviceOom),
    Traced(TracedOom),
}

/// The first traced allocation refused for want of memory, and how many were.
struct TracedOom {
    t_ms: u64,
    bytes: u64,
    error: String,
    api: &'static str,
    device: Option<u32>,
    count: u64,
}

/// The earliest traced out-of-memory return over the recording's calls.
fn traced(rec: &Recording) -> Option<TracedOom> {
    let rows = rec.calls.as_ref()?.rows.iter();
    let count = rows.clone().map(|r| r.out_of_memory).sum();
    rows.filter_map(|r| r.first_out_of_memory.as_ref().map(|o| (r, o)))
        .min_by_key(|(_, (t, _, _))| *t)
        .map(|(r, (t_ms, bytes, error))| TracedOom {
            t_ms: *t_ms,
            bytes: *bytes,
            error: error.clone(),
            api: r.api.name(),
            device: r.device,
            count,
        })
}

/// One finding for the job's first device-memory failure, counting the later ones: from its
/// output where a line says so, else from the traced calls' return codes.
pub fn device_oom_findings(rec: &Recording) -> Vec<TimelineFinding> {
    let mut lines = rec
        .evidence
        .errors
        .iter()
        .filter_map(|e| Some((e.line.t_ms, device_oom(&e.line.text)?)));
    let traced = traced(rec);
    let (t_ms, source, later) = match (lines.next(), traced) {
        (Some((t, oom)), tr) => {
            let later = lines.count();
            (t, Source::Output(oom), (later, tr))
        }
        (None, Some(tr)) => (tr.t_ms, Source::Traced(tr), (0, None)),
        (None, None) => return Vec::new(),
    };
    let holders = holders_at(rec, t_ms);
    let (mut message, bytes) = match &source {
        Source::Output(oom) => (
            format!(
                "the job's output says {} could not allocate device memory{}{}",
                oom.layer.as_str(),
                oom.gpu
                    .map(|g| format!(" on its GPU {g}"))
                    .unwrap_or_default(),
                asked(oom)
            ),
            oom.asked.unwrap_or(0),
        ),
        Source::Traced(tr) => (refused(tr), tr.bytes),
    };
    message.push_str(&held_then(rec, &holders));
    if later.0 > 0 {
        message.push_str(&format!("; {} more such line(s) followed", later.0));
    }
    if let Some(tr) = later.1 {
        message.push_str(&format!(
            "; the tracer saw {} allocation(s) refused ({})",
            tr.count, tr.error
        ));
    }
    message.push_str("; see --explain device_oom");
    let mut f = Finding::new(Kind::DeviceOom, Severity::Critical, message);
    f.bytes = bytes;
    if let Some((pid, dev, _)) = holders.first() {
        f.pid = Some(*pid);
        f.rank = rec.process(*pid).and_then(|p| p.rank);
        f.device = Some(dev.clone());
    }
    vec![TimelineFinding {
        finding: f,
        t_s: t_ms.saturating_sub(rec.host.first_ms) as f64 / 1000.0,
        worst_severity: None,
        held: None,
    }]
}

/// "a traced … allocation of N on its device D was refused (ERROR)", with the count.
fn refused(tr: &TracedOom) -> String {
    let more = match tr.count {
        0 | 1 => String::new(),
        n => format!(", {n} refused in all"),
    };
    format!(
        "a traced {} allocation of {}{} was refused ({}){more}",
        tr.api,
        human_bytes(tr.bytes),
        tr.device
            .map(|d| format!(" on its device {d}"))
            .unwrap_or_default(),
        tr.error
    )
}

/// "; device memory held then: …", or that nothing was held.
fn held_then(rec: &Recording, holders: &[(u32, String, u64)]) -> String {
    if holders.is_empty() {
        return "; no process held device memory on the samples around it".into();
    }
    let names: Vec<String> = holders
        .iter()
        .map(|(pid, dev, b)| format!("{} {} on {dev}", who(rec, *pid), human_bytes(*b)))
        .collect();
    format!("; device memory held then: {}", names.join(", "))
}

fn asked(oom: &DeviceOom) -> String {
    let mut s = String::new();
    if let Some(b) = oom.asked {
        s.push_str(&format!(" (asked for {}", human_bytes(b)));
        if let Some(free) = oom.free {
            s.push_str(&format!(", {} free", human_bytes(free)));
        }
        s.push(')');
    }
    s
}

fn who(rec: &Recording, pid: u32) -> String {
    match rec.process(pid) {
        Some(p) => match p.rank {
            Some(r) => format!("rank {r} (pid {pid}, {})", p.comm),
            None => format!("pid {pid} ({})", p.comm),
        },
        None => format!("pid {pid}"),
    }
}

/// (pid, device, bytes) of device-local memory at `t_ms`, largest first: each series' highest
/// value over the plot columns of the samples just before and at that time.
fn holders_at(rec: &Recording, t_ms: u64) -> Vec<(u32, String, u64)> {
    let index = sample_index(rec, t_ms);
    let mut out: Vec<(u32, String, u64)> = rec
        .series
        .iter()
        .filter(|s| s.class == MemClass::Device)
        .filter_map(|s| {
            let cols = s.columns.len();
            let col = (index as u128 * cols as u128 / rec.span.max(1) as u128) as usize;
            let at = |c: usize| s.columns.get(c).map_or(0, |v| v.1);
            let bytes = at(col).max(at(col.saturating_sub(1)));
            (bytes > 0).then(|| (s.pid, s.device.clone(), bytes))
        })
        .collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    out.truncate(MAX_HOLDERS);
    out
}

/// The sample index nearest `t_ms`, taking the samples as evenly spaced over the recording.
fn sample_index(rec: &Recording, t_ms: u64) -> usize {
    let (first, last) = (rec.host.first_ms, rec.host.last_ms);
    let last_index = rec.span.saturating_sub(1);
    if last <= first {
        return last_index;
    }
    let at = t_ms.clamp(first, last) - first;
    (at as u128 * last_index as u128 / (last - first) as u128) as usize
}
