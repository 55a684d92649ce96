//! `peer_mirror`: host-class resident bytes on one device that mirror the device-local working
//! set of the process's other devices (GSD-13038 and its family).
//!
//! The rule (docs/DESIGN.md): for a process P and each *discrete* device D where P holds host-class
//! resident bytes H_D, let L_other be P's device-local resident bytes on all its other devices
//! (an integrated GPU's host-class memory is its working memory: it counts as device-local, and
//! is never itself a mirror). D holds a mirror when
//! `H_D ≥ max(peer.min_bytes, peer.min_ratio × L_other)` and `H_D ≤ peer.max_ratio × L_other`:
//! a mirror cannot be larger than what it mirrors. One finding per mirroring device, so a rank
//! per device (DDP: the home VRAM mirrored on the peer's fd) and one process over several
//! devices (each device's GTT mirrors the others' allocations) are both covered.
//!
//! A second shape (ggml-org/llama.cpp#22116): when P's context spans several discrete devices, a
//! device whose host-class bytes match its *own* device-local bytes (within the same margin) is
//! the same pattern seen on the owning card's fd. It needs at least `peer.own_min_bytes` (1 GiB):
//! a runtime's ordinary host buffers are hundreds of MiB and can match a small early working set.
//!
//! Backing comes from driver-held host memory over all mirrored bytes on the machine; the
//! severity follows from it, the same in every view.

use super::{percent, Backing, Finding, Kind, Thresholds};
use crate::ledger::{DriverHeld, Ledger, MemClass, ProcessRow};
use crate::units::human_bytes;

struct Candidate<'a> {
    row: &'a ProcessRow,
    /// The device whose working set is mirrored (the other device with most local bytes, or D).
    source: String,
    /// D.
    mirror: &'a str,
    bytes: u64,
    /// What it is judged against.
    local: u64,
}

/// Device-local working memory of `row` on `device` (an integrated GPU's host-class bytes).
fn working_set(ledger: &Ledger, row: &ProcessRow, device: &str) -> u64 {
    let local = row.resident(device, MemClass::Device);
    if ledger.is_integrated(device) {
        local + row.resident(device, MemClass::Host)
    } else {
        local
    }
}

fn candidates<'a>(ledger: &Ledger, row: &'a ProcessRow, t: &Thresholds) -> Vec<Candidate<'a>> {
    let devices = row.devices();
    let discrete: Vec<&str> = devices
        .iter()
        .copied()
        .filter(|d| !ledger.is_integrated(d))
        .collect();
    let mut out = Vec::new();
    for &d in &discrete {
        let host = row.resident(d, MemClass::Host);
        let others: Vec<(&str, u64)> = devices
            .iter()
            .filter(|o| **o != d)
            .map(|o| (*o, working_set(ledger, row, o)))
            .collect();
        let l_other: u64 = others.iter().map(|(_, b)| b).sum();
        let within = |reference: u64| {
            host >= t
                .peer_min_bytes
                .max((reference as f64 * t.peer_min_ratio) as u64)
                && host as f64 <= reference as f64 * t.peer_max_ratio
        };
        if l_other > 0 && within(l_other) {
            let source = others.iter().max_by_key(|(_, b)| *b).map(|(o, _)| *o);
            out.push(Candidate {
                row,
                source: source.unwrap_or(d).to_string(),
                mirror: d,
                bytes: host,
                local: l_other,
            });
            continue;
        }
        let own = row.resident(d, MemClass::Device);
        let own_match = own > 0
            && host >= t.peer_own_min_bytes
            && within(own)
            && host as f64 >= own as f64 / t.peer_max_ratio
            && discrete.len() > 1;
        if own_match {
            out.push(Candidate {
                row,
                source: d.to_string(),
                mirror: d,
                bytes: host,
                local: own,
            });
        }
    }
    out
}

fn backing_of(evidence: Option<&DriverHeld>, mirrored: u64, t: &Thresholds) -> Backing {
    match evidence.map(|e| e.bytes as f64 / mirrored.max(1) as f64) {
        Some(c) if c >= t.backing_pinned => Backing::Pinned,
        Some(c) if c < t.backing_not_pinned => Backing::NotPinned,
        _ => Backing::Unknown,
    }
}

fn verdict(backing: Backing, evidence: Option<&DriverHeld>, mirrored: u64) -> String {
    let Some(e) = evidence else {
        return "no host counter is readable to tell whether it is pinned".to_string();
    };
    let held = e.parts();
    match backing {
        Backing::Pinned => format!("host counters show it pinned ({held})"),
        Backing::NotPinned => format!(
            "host counters show it is not backed ({held}, {:.0} % of the mirrored bytes), bookkeeping only for now",
            percent(e.bytes, mirrored)
        ),
        Backing::Unknown => format!(
            "host counters cover {:.0} % of it ({held}): it may be pinned",
            percent(e.bytes, mirrored)
        ),
    }
}

pub(super) fn find(ledger: &Ledger, t: &Thresholds) -> Vec<Finding> {
    let cands: Vec<Candidate> = ledger
        .processes
        .iter()
        .flat_map(|row| candidates(ledger, row, t))
        .collect();
    let mirrored: u64 = cands.iter().map(|c| c.bytes).sum();
    let evidence = ledger.host.driver_held();
    let backing = backing_of(evidence.as_ref(), mirrored, t);
    let verdict = verdict(backing, evidence.as_ref(), mirrored);
    cands
        .into_iter()
        .map(|c| {
            let ratio = c.bytes as f64 / c.local as f64;
            let whose = match (c.source == c.mirror, c.row.devices().len()) {
                (true, _) => "its own VRAM there, in a context over several devices",
                (false, 2) => "its VRAM",
                (false, _) => "its VRAM on its other devices",
            };
            let what = format!(
                "holds {} of host-class memory on peer {} = {:.0} % of {whose}",
                human_bytes(c.bytes),
                c.mirror,
                ratio * 100.0
            );
            let who = match c.row.rank {
                Some(r) => format!("rank {r} (pid {}, home {})", c.row.pid, c.source),
                None => format!("pid {} ({}, home {})", c.row.pid, c.row.comm, c.source),
            };
            Finding {
                kind: Kind::PeerMirror,
                severity: backing.severity(),
                message: format!(
                    "{who} {what}; {verdict}: this is the peer-mirror pattern; see --explain peer_mirror"
                ),
                pid: Some(c.row.pid),
                rank: c.row.rank,
                device: Some(c.source),
                peer: Some(c.mirror.to_string()),
                bytes: c.bytes,
                ratio: Some(ratio),
                backing: Some(backing),
                source: evidence.map(|e| e.counter.as_str().to_string()),
                issue: None,
            }
        })
        .collect()
}
