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

/// One finding for the job's first device-memory failure, counting the later ones.
pub fn device_oom_findings(rec: &Recording) -> Vec<TimelineFinding> {
    let mut failures = rec
        .evidence
        .errors
        .iter()
        .filter_map(|e| Some((e, device_oom(&e.line.text)?)));
    let Some((first, oom)) = failures.next() else {
        return Vec::new();
    };
    let later = failures.count();
    let t_ms = first.line.t_ms;
    let holders = holders_at(rec, t_ms);
    let mut message = format!(
        "the job's output says {} could not allocate device memory{}{}",
        oom.layer.as_str(),
        oom.gpu
            .map(|g| format!(" on its GPU {g}"))
            .unwrap_or_default(),
        asked(&oom)
    );
    if holders.is_empty() {
        message.push_str("; no process held device memory on the samples around it");
    } else {
        let names: Vec<String> = holders
            .iter()
            .map(|(pid, dev, b)| format!("{} {} on {dev}", who(rec, *pid), human_bytes(*b)))
            .collect();
        message.push_str(&format!("; device memory held then: {}", names.join(", ")));
    }
    if later > 0 {
        message.push_str(&format!("; {later} more such line(s) followed"));
    }
    message.push_str("; see --explain device_oom");
    let mut f = Finding::new(Kind::DeviceOom, Severity::Critical, message);
    f.bytes = oom.asked.unwrap_or(0);
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
