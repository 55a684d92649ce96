//! `peer_mirror`: a process's host-class resident bytes on a peer device ≈ its VRAM working set
//! (GSD-13038). Backing comes from host evidence over all mirrored bytes on the machine.

use super::{percent, Backing, Finding, Kind, Severity, Thresholds};
use crate::ledger::{Ledger, MemClass};
use crate::units::human_bytes;

struct Candidate<'a> {
    row: &'a crate::ledger::ProcessRow,
    home: &'a str,
    peer: &'a str,
    bytes: u64,
    local: u64,
}

pub(super) fn find(ledger: &Ledger, t: &Thresholds) -> Vec<Finding> {
    let mut cands = Vec::new();
    for row in &ledger.processes {
        let Some(home) = row.home_device.as_deref() else {
            continue;
        };
        let local = row.resident(home, MemClass::Device);
        // With two devices of similar VRAM use there is no telling which one is the peer.
        let runner_up = row
            .devices()
            .into_iter()
            .filter(|d| *d != home)
            .map(|d| row.resident(d, MemClass::Device))
            .max()
            .unwrap_or(0);
        if local == 0 || runner_up as f64 >= local as f64 * t.home_margin {
            continue;
        }
        let floor = t
            .peer_min_bytes
            .max((local as f64 * t.peer_min_ratio) as u64);
        for peer in row.devices().into_iter().filter(|d| *d != home) {
            let bytes = row.resident(peer, MemClass::Host);
            if bytes >= floor {
                cands.push(Candidate {
                    row,
                    home,
                    peer,
                    bytes,
                    local,
                });
            }
        }
    }
    let mirrored: u64 = cands.iter().map(|c| c.bytes).sum();
    let evidence = ledger.host.driver_held();
    let cover = evidence.map(|(v, _)| v as f64 / mirrored.max(1) as f64);
    let backing = match cover {
        Some(c) if c >= t.backing_pinned => Backing::Pinned,
        Some(c) if c < t.backing_not_pinned => Backing::NotPinned,
        _ => Backing::Unknown,
    };
    let severity = match backing {
        Backing::Pinned => Severity::Critical,
        Backing::Unknown => Severity::Warning,
        Backing::NotPinned => Severity::Info,
    };
    cands
        .into_iter()
        .map(|c| {
            let ratio = c.bytes as f64 / c.local as f64;
            let verdict = match (backing, evidence) {
                (Backing::Pinned, Some((v, src))) => {
                    format!("host counters show it pinned ({src} {})", human_bytes(v))
                }
                (Backing::NotPinned, Some((v, src))) => format!(
                    "host counters show it is not backed ({src} {}, {:.0} % of the mirrored bytes), bookkeeping only for now",
                    human_bytes(v),
                    percent(v, mirrored)
                ),
                (_, Some((v, src))) => format!(
                    "host counters cover {:.0} % of it ({src} {}): it may be pinned",
                    percent(v, mirrored),
                    human_bytes(v)
                ),
                (_, None) => "no host counter is readable to tell whether it is pinned".to_string(),
            };
            let who = match c.row.rank {
                Some(r) => format!("rank {r} (pid {}, home {})", c.row.pid, c.home),
                None => format!("pid {} ({}, home {})", c.row.pid, c.row.comm, c.home),
            };
            Finding {
                kind: Kind::PeerMirror,
                severity,
                message: format!(
                    "{who} holds {} of host-class memory on peer {} = {:.0} % of its VRAM; {verdict}: this is the peer-mirror pattern; see --explain peer_mirror",
                    human_bytes(c.bytes),
                    c.peer,
                    ratio * 100.0
                ),
                pid: Some(c.row.pid),
                rank: c.row.rank,
                device: Some(c.home.to_string()),
                peer: Some(c.peer.to_string()),
                bytes: c.bytes,
                ratio: Some(ratio),
                backing: Some(backing),
                source: evidence.map(|(_, s)| s.to_string()),
            }
        })
        .collect()
}
