//! `peer_mirror`: host-class resident bytes on one device that mirror the device-local working
//! set of the process's other devices (GSD-13038 and its family).
//!
//! The rule (docs/DESIGN.md, "Findings"): for a process P and each *discrete* device D where P
//! holds host-class resident bytes H_D, let L_other be P's device-local resident bytes on its
//! other devices, counting only devices where P holds more than a context
//! (`peer.context_floor`): every runtime creates a context of 0.1–0.5 GiB on each device it can
//! see, and a context is not an allocation that gets mirrored. An integrated GPU's host-class
//! memory is its working memory: it counts as device-local, and is never itself a mirror.
//! D holds a mirror when `H_D ≥ max(peer.min_bytes, peer.min_ratio × L_other)` and
//! `H_D ≤ peer.max_ratio × L_other` (a mirror cannot be larger than what it mirrors). One
//! finding per mirroring device, so a rank per device (DDP: the home VRAM mirrored on the peer's
//! fd) and one process over several devices (each device's GTT mirrors the others'
//! allocations) are both covered. Ordinary host buffers on a process's own card and contexts on
//! any number of devices never make a mirror. Pinned host buffers that belong to no card (CUDA's
//! `cudaHostAlloc`, read from smaps as `pinned-shmem`) are no device's host-class bytes here.
//!
//! A separate rule and kind, `own_card_mirror`, the owning-card shape (ggml-org/llama.cpp#22116):
//! when P's context spans several discrete devices, a device whose host-class bytes match P's
//! *own* device-local bytes there (within the same margins, and at least `peer.own_min_bytes`).
//! It is not a peer mirror: nothing is held on another card's fd, and a host copy the program
//! made looks the same; its severity is [`Backing::own_card_severity`].
//!
//! Backing: the share of all mirrored bytes on the machine that driver-held host memory covers
//! *beyond* the ordinary (non-mirror) host-class bytes every GPU client holds, which are pinned
//! too (a runtime's GTT staging and command buffers). The severity follows from it, the same in
//! every view. The simulator's ground truth (`gpuledger-sim/truth.json`) is the oracle this rule
//! is tested against (`tests/oracle.rs`).

use super::{percent, Backing, Finding, Kind, Thresholds};
use crate::ledger::{DriverHeld, Ledger, MemClass, ProcessRow, UsageSource};
use crate::units::human_bytes;
use std::collections::BTreeMap;

/// Which shape a candidate has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// D's host-class bytes mirror the working set on P's other devices.
    Peer {
        /// How many other devices hold more than a context.
        sources: usize,
    },
    /// D's host-class bytes match P's own device-local bytes on D.
    OwningCard {
        /// How many discrete devices P's context spans.
        spans: usize,
    },
}

struct Candidate<'a> {
    row: &'a ProcessRow,
    shape: Shape,
    /// The device whose working set is mirrored (the home when it is among the sources).
    source: &'a str,
    /// D.
    mirror: &'a str,
    bytes: u64,
    /// What it is judged against.
    local: u64,
}

/// One process's resident bytes per device, summed once (a row has a usage entry per device ×
/// region; looking each pair up again would make the rule cubic in devices).
struct PerDevice<'a> {
    /// (device, device-local bytes, host-class bytes, integrated).
    devices: Vec<(&'a str, u64, u64, bool)>,
}

impl<'a> PerDevice<'a> {
    fn of(ledger: &Ledger, row: &'a ProcessRow) -> PerDevice<'a> {
        let mut by: BTreeMap<&'a str, (u64, u64)> = BTreeMap::new();
        // Pinned host buffers read from smaps (CUDA's cudaHostAlloc) belong to no card: the
        // ledger files them under one, but they are not that card's memory and mirror nothing.
        for u in row.usage.iter().filter(|u| u.source != UsageSource::Smaps) {
            let e = by.entry(u.device.as_str()).or_default();
            match u.class {
                MemClass::Device => e.0 += u.resident.unwrap_or(0),
                MemClass::Host => e.1 += u.resident.unwrap_or(0),
                MemClass::Stolen => {}
            }
        }
        PerDevice {
            devices: by
                .into_iter()
                .map(|(d, (local, host))| (d, local, host, ledger.is_integrated(d)))
                .collect(),
        }
    }

    /// Device-local working memory on each device (an integrated GPU's host-class bytes
    /// included), 0 where it is no more than a context.
    fn working_sets(&self, t: &Thresholds) -> Vec<(&'a str, u64)> {
        self.devices
            .iter()
            .map(|&(d, local, host, integrated)| {
                let ws = if integrated { local + host } else { local };
                (d, if ws > t.peer_context_floor { ws } else { 0 })
            })
            .collect()
    }
}

/// `host` lies within the mirror margins of `reference`.
fn within(host: u64, reference: u64, t: &Thresholds) -> bool {
    reference > 0
        && host
            >= t.peer_min_bytes
                .max((reference as f64 * t.peer_min_ratio) as u64)
        && host as f64 <= reference as f64 * t.peer_max_ratio
}

fn candidates<'a>(ledger: &Ledger, row: &'a ProcessRow, t: &Thresholds) -> Vec<Candidate<'a>> {
    let per = PerDevice::of(ledger, row);
    let sets = per.working_sets(t);
    let all_sets: u64 = sets.iter().map(|(_, b)| b).sum();
    let holders = sets.iter().filter(|(_, b)| *b > 0).count();
    let discrete: Vec<(&'a str, u64, u64)> = per
        .devices
        .iter()
        .filter(|d| !d.3)
        .map(|&(d, local, host, _)| (d, local, host))
        .collect();
    let home = row.home_device.as_deref();
    let mut out = Vec::new();
    for (i, &(d, own, host)) in discrete.iter().enumerate() {
        let own_set = sets.iter().find(|(o, _)| *o == d).map_or(0, |(_, b)| *b);
        let l_other = all_sets - own_set;
        if within(host, l_other, t) {
            let others = sets.iter().filter(|(o, b)| *o != d && *b > 0);
            let source = others
                .clone()
                .find(|(o, _)| Some(*o) == home)
                .or_else(|| others.max_by_key(|(o, b)| (*b, std::cmp::Reverse(*o))))
                .map_or(d, |(o, _)| *o);
            out.push(Candidate {
                row,
                shape: Shape::Peer {
                    sources: holders - usize::from(own_set > 0),
                },
                source,
                mirror: d,
                bytes: host,
                local: l_other,
            });
        } else if let Some(c) = owning_card(row, (discrete[i].0, own, host), discrete.len(), t) {
            out.push(c);
        }
    }
    out
}

/// The owning-card shape on device `d` with its own device-local and host-class bytes (see the
/// module doc), when `row`'s context spans `spans` discrete devices.
fn owning_card<'a>(
    row: &'a ProcessRow,
    (d, own, host): (&'a str, u64, u64),
    spans: usize,
    t: &Thresholds,
) -> Option<Candidate<'a>> {
    let matches = spans > 1
        && host >= t.peer_own_min_bytes
        && within(host, own, t)
        && host as f64 >= own as f64 / t.peer_max_ratio;
    matches.then_some(Candidate {
        row,
        shape: Shape::OwningCard { spans },
        source: d,
        mirror: d,
        bytes: host,
        local: own,
    })
}

/// Driver-held host memory beyond the host-class bytes that are not mirrors: what can back the
/// mirrors. Ordinary GTT buffers are pinned pages too and sit in the same counters.
fn mirror_evidence(ledger: &Ledger, evidence: &DriverHeld, mirrored: u64) -> u64 {
    let ordinary = ledger.host_class_resident().saturating_sub(mirrored);
    evidence.bytes.saturating_sub(ordinary)
}

fn backing_of(covered: Option<u64>, mirrored: u64, t: &Thresholds) -> Backing {
    match covered.map(|c| c as f64 / mirrored.max(1) as f64) {
        Some(c) if c >= t.backing_pinned => Backing::Pinned,
        Some(c) if c < t.backing_not_pinned => Backing::NotPinned,
        _ => Backing::Unknown,
    }
}

fn verdict(backing: Backing, evidence: Option<&DriverHeld>, covered: u64, mirrored: u64) -> String {
    let Some(e) = evidence else {
        return "no host counter is readable to tell whether it is pinned".to_string();
    };
    let held = e.parts();
    let share = percent(covered, mirrored);
    match backing {
        Backing::Pinned => format!("host counters show it pinned ({held})"),
        Backing::NotPinned => format!(
            "host counters show it is not backed ({held}, {share:.0} % of the mirrored bytes beyond ordinary buffers), bookkeeping only for now"
        ),
        Backing::Unknown => format!(
            "host counters cover {share:.0} % of it beyond ordinary buffers ({held}): it may be pinned"
        ),
    }
}

/// `rank 0 (pid 4001, home 0000:03:00.0)` or `pid 7100 (python3)`: the home (the ledger's, as
/// the table marks it) only when it is `source`, the device whose memory the finding is about, so
/// the text never names one card in two roles or a card the finding does not carry.
fn who(row: &ProcessRow, source: &str) -> String {
    let home = match row.home_device.as_deref() {
        Some(h) if h == source => format!(", home {h}"),
        _ => String::new(),
    };
    match row.rank {
        Some(r) => format!("rank {r} (pid {}{home})", row.pid),
        None => format!("pid {} ({}{home})", row.pid, row.comm),
    }
}

/// What is mirrored where, in words: the device holding the host-class bytes (the finding's
/// `peer`) and the device whose memory they mirror (its `device`).
fn what(c: &Candidate) -> String {
    let pct = c.bytes as f64 / c.local as f64 * 100.0;
    let bytes = human_bytes(c.bytes);
    let (mirror, source) = (c.mirror, c.source);
    match c.shape {
        Shape::Peer { sources: 1 } => format!(
            "holds {bytes} of host-class memory on peer {mirror} = {pct:.0} % of its VRAM on {source}"
        ),
        Shape::Peer { sources } => format!(
            "holds {bytes} of host-class memory on peer {mirror} = {pct:.0} % of its VRAM on its {sources} other devices ({source} and {} more)",
            sources - 1
        ),
        Shape::OwningCard { spans } => format!(
            "holds {bytes} of host-class memory on its own card {mirror} = {pct:.0} % of its VRAM there, in a context over {spans} devices"
        ),
    }
}

/// The finding a candidate makes, with the machine's backing and its verdict in words.
fn finding(
    c: &Candidate,
    backing: Backing,
    verdict: &str,
    evidence: Option<&DriverHeld>,
) -> Finding {
    let (kind, severity, name, peer) = match c.shape {
        Shape::Peer { .. } => (
            Kind::PeerMirror,
            backing.severity(),
            "this is the peer-mirror pattern",
            Some(c.mirror.to_string()),
        ),
        Shape::OwningCard { .. } => (
            Kind::OwnCardMirror,
            backing.own_card_severity(),
            "the owning-card shape, not a peer mirror",
            None,
        ),
    };
    let who = match c.shape {
        Shape::Peer { .. } => who(c.row, c.source),
        Shape::OwningCard { .. } => who(c.row, ""),
    };
    let message = format!(
        "{who} {}; {verdict}: {name}; see --explain {}",
        what(c),
        kind.as_str()
    );
    Finding {
        pid: Some(c.row.pid),
        rank: c.row.rank,
        device: Some(c.source.to_string()),
        peer,
        bytes: c.bytes,
        ratio: Some(c.bytes as f64 / c.local as f64),
        backing: Some(backing),
        source: evidence.map(|e| e.counter.as_str().to_string()),
        ..Finding::new(kind, severity, message)
    }
}

/// The peer_mirror findings and the own_card_mirror findings of a ledger, one per mirroring
/// device; the backing is one verdict over all their bytes.
pub(super) fn find(ledger: &Ledger, t: &Thresholds) -> Vec<Finding> {
    let cands: Vec<Candidate> = ledger
        .processes
        .iter()
        .flat_map(|row| candidates(ledger, row, t))
        .collect();
    let mirrored: u64 = cands.iter().map(|c| c.bytes).sum();
    let evidence = ledger.host.driver_held();
    let covered = evidence
        .as_ref()
        .map(|e| mirror_evidence(ledger, e, mirrored));
    let backing = backing_of(covered, mirrored, t);
    let verdict = verdict(backing, evidence.as_ref(), covered.unwrap_or(0), mirrored);
    cands
        .iter()
        .map(|c| finding(c, backing, &verdict, evidence.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::fixture::{client, host, ledger, process, GIB};
    use crate::findings::Severity;

    const A: &str = "0000:03:00.0";
    const B: &str = "0000:04:00.0";

    /// Rank 0 with `vram` on its home A and `gtt` of host-class memory on peer B; the driver
    /// holds `held` bytes of host RAM.
    fn rank0(vram: u64, gtt: u64, held: u64) -> Ledger {
        let p = process(
            10,
            Some(0),
            &[(A, MemClass::Device, vram), (B, MemClass::Host, gtt)],
        );
        let c = client(10, B, "amdgpu", &[("gtt", gtt)]);
        ledger(&[A, B], vec![p], vec![c], host(held, 32 * GIB))
    }

    #[test]
    fn host_memory_on_the_peer_the_size_of_the_home_vram_is_a_mirror() {
        let found = find(&rank0(16 * GIB, 16 * GIB, 16 * GIB), &Thresholds::default());
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(
            (
                f.kind,
                f.pid,
                f.rank,
                f.device.as_deref(),
                f.peer.as_deref()
            ),
            (Kind::PeerMirror, Some(10), Some(0), Some(A), Some(B))
        );
        assert_eq!((f.bytes, f.backing), (16 * GIB, Some(Backing::Pinned)));
        assert_eq!(f.severity, Severity::Critical);
    }

    #[test]
    fn a_mirror_the_host_counters_do_not_cover_is_not_pinned() {
        let found = find(&rank0(16 * GIB, 16 * GIB, 0), &Thresholds::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].backing, Some(Backing::NotPinned));
        assert_eq!(found[0].severity, Severity::Info);
    }

    #[test]
    fn gtt_matching_the_own_vram_in_a_two_card_context_is_an_own_card_mirror() {
        let p = process(
            10,
            None,
            &[
                (A, MemClass::Device, 8 * GIB),
                (A, MemClass::Host, 8 * GIB),
                (B, MemClass::Device, 200 << 20),
            ],
        );
        let c = client(10, A, "xe", &[("gtt", 8 * GIB)]);
        let l = ledger(&[A, B], vec![p], vec![c], host(8 * GIB, 32 * GIB));
        let found = find(&l, &Thresholds::default());
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(
            (f.kind, f.device.as_deref(), f.peer.as_deref(), f.bytes),
            (Kind::OwnCardMirror, Some(A), None, 8 * GIB)
        );
        assert_eq!(f.backing, Some(Backing::Pinned));
        assert_eq!(
            f.severity,
            Severity::Warning,
            "never critical: {}",
            f.message
        );
        assert!(!f.message.contains(B), "{}", f.message);
    }

    #[test]
    fn a_process_over_two_cards_is_named_by_the_mirrored_card_and_the_holding_card() {
        // Its home (most VRAM) is B, whose fd holds the mirror of A's allocations.
        let p = process(
            10,
            None,
            &[
                (A, MemClass::Device, 4 * GIB),
                (B, MemClass::Device, 5 * GIB),
                (B, MemClass::Host, 4 * GIB),
            ],
        );
        let c = client(10, B, "xe", &[("gtt", 4 * GIB)]);
        let l = ledger(&[A, B], vec![p], vec![c], host(4 * GIB, 32 * GIB));
        let found = find(&l, &Thresholds::default());
        let f = found.iter().find(|f| f.peer.as_deref() == Some(B)).unwrap();
        assert_eq!(f.device.as_deref(), Some(A));
        assert!(
            f.message
                .contains(&format!("on peer {B} = 100 % of its VRAM on {A}")),
            "{}",
            f.message
        );
        assert!(!f.message.contains("home"), "{}", f.message);
    }

    #[test]
    fn small_host_buffers_and_contexts_are_no_mirror() {
        let t = Thresholds::default();
        // 128 MiB of GTT on the peer: below peer.min_bytes.
        assert_eq!(find(&rank0(16 * GIB, 128 << 20, 0), &t), Vec::new());
        // Contexts only: 400 MiB on each device is no working set to mirror.
        assert_eq!(find(&rank0(400 << 20, 400 << 20, 0), &t), Vec::new());
        // More host memory on the peer than the VRAM it could mirror (beyond peer.max_ratio).
        assert_eq!(find(&rank0(4 * GIB, 16 * GIB, 0), &t), Vec::new());
    }
}
