//! Risk projection: host RAM needed if every rank's device segments are mirrored on its peers.
//!
//! Each rank's mirror (its VRAM working set, or the peer-fd host-class bytes a recording measured)
//! is pinned once per peer: `all` peers (a Level Zero context over every card: N − 1 each) or
//! `ring` neighbours (2 each, 1 for N = 2). Needed = N × peers × mirror, on top of what the machine
//! already uses. GSD-13036: 4 ranks × 3 peers × 11.4 GiB = 136.8 GiB on a 60 GB host.

use serde::Serialize;

/// Which peers a rank's segments are mirrored on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peers {
    /// Every other rank's device.
    All,
    /// The two ring neighbours.
    Ring,
}

/// Peers each rank mirrors on for `ranks` ranks.
pub fn peers_per_rank(ranks: u32, peers: Peers) -> u32 {
    match peers {
        Peers::All => ranks.saturating_sub(1),
        Peers::Ring => ranks.saturating_sub(1).min(2),
    }
}

/// Pinned host bytes needed by `ranks` ranks each mirroring `mirror` bytes.
pub fn needed(ranks: u32, peers: Peers, mirror: u64) -> u64 {
    u64::from(ranks) * u64::from(peers_per_rank(ranks, peers)) * mirror
}

/// One projected rank count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Projection {
    /// Ranks.
    pub ranks: u32,
    /// Pinned bytes needed.
    pub needed: u64,
    /// Whether it fits beside what is already in use.
    pub fits: bool,
}

/// Projections for 2..=`max_ranks`, against `mem_total` with `in_use` bytes already taken, and
/// the first rank count that does not fit.
pub fn project(
    max_ranks: u32,
    peers: Peers,
    mirror: u64,
    mem_total: u64,
    in_use: u64,
) -> (Vec<Projection>, Option<u32>) {
    let room = mem_total.saturating_sub(in_use);
    let rows: Vec<Projection> = (2..=max_ranks.max(2))
        .map(|n| {
            let need = needed(n, peers, mirror);
            Projection {
                ranks: n,
                needed: need,
                fits: need < room,
            }
        })
        .collect();
    let first_bad = (2..=64).find(|&n| needed(n, peers, mirror) >= room);
    (rows, first_bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    const GIB: u64 = 1 << 30;

    #[test]
    fn hand_computed_cases() {
        // GSD-13036: 4 × 3 × 11.4 GiB.
        let mirror = (11.4 * GIB as f64) as u64;
        assert_eq!(needed(4, Peers::All, mirror), 12 * mirror);
        assert!(needed(4, Peers::All, mirror) > 60_000_000_000);
        // The seed: 2 × 1 × 17.7 GiB = 35.4 GiB, fits in 64 GiB beside 20 GiB of other use.
        let seed = (17.7 * GIB as f64) as u64;
        let (rows, first_bad) = project(4, Peers::All, seed, 64 * GIB, 20 * GIB);
        assert_eq!(
            rows[0],
            Projection {
                ranks: 2,
                needed: 2 * seed,
                fits: true
            }
        );
        assert!(!rows[1].fits, "3 ranks need 6 × 17.7 GiB");
        assert_eq!(first_bad, Some(3));
        assert_eq!(peers_per_rank(8, Peers::Ring), 2);
        assert_eq!(peers_per_rank(2, Peers::Ring), 1);
        assert_eq!(needed(8, Peers::Ring, GIB), 16 * GIB);
    }
}
