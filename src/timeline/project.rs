//! Risk projection: host RAM needed if every rank's device segments are mirrored on its peers.
//!
//! Each rank's mirror (its VRAM working set, or the peer-fd host-class bytes a recording measured)
//! is pinned once per peer: `all` peers (a Level Zero context over every card: N − 1 each) or
//! `ring` neighbours (2 each, 1 for N = 2). Needed = N × peers × mirror, on top of what the machine
//! already uses. GSD-13036: 4 ranks × 3 peers × 11.4 GiB = 136.8 GiB on a 60 GB host.

use crate::units::human_bytes;
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

/// The most ranks `project` projects to.
pub const MAX_RANKS: u32 = 1024;

/// A projection that cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectError {
    /// The rank count is outside 2..=[`MAX_RANKS`].
    #[error("--ranks {0}: give 2 to {MAX_RANKS}")]
    Ranks(u32),
    /// ranks × peers × mirror does not fit in 64 bits (16 EiB): the per-rank size is absurd.
    #[error(
        "{ranks} ranks × {peers} peers × {} per mirror exceeds 16 EiB, more than any machine \
         holds; give a per-rank size below {}",
        human_bytes(*mirror),
        human_bytes(*limit)
    )]
    Overflow {
        /// Ranks of the first row that overflowed.
        ranks: u32,
        /// Peers each.
        peers: u32,
        /// The per-peer mirror, bytes.
        mirror: u64,
        /// The largest mirror that `max_ranks` ranks can be projected with.
        limit: u64,
    },
}

/// Pinned host bytes needed by `ranks` ranks each mirroring `mirror` bytes; `None` past 16 EiB.
pub fn needed(ranks: u32, peers: Peers, mirror: u64) -> Option<u64> {
    u64::from(ranks)
        .checked_mul(u64::from(peers_per_rank(ranks, peers)))?
        .checked_mul(mirror)
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

/// Every projected rank count and what they add up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outlook {
    /// One row per rank count, 2..=max_ranks.
    pub rows: Vec<Projection>,
    /// The first rank count that does not fit, searched over 2..=[`MAX_RANKS`] (so it can lie
    /// beyond the rows); a need past 16 EiB never fits.
    pub first_bad: Option<u32>,
    /// Bytes free for pinning: MemTotal minus what is in use.
    pub room: u64,
}

/// Projections for 2..=`max_ranks` against `mem_total` with `in_use` bytes already taken.
pub fn project(
    max_ranks: u32,
    peers: Peers,
    mirror: u64,
    mem_total: u64,
    in_use: u64,
) -> Result<Outlook, ProjectError> {
    if !(2..=MAX_RANKS).contains(&max_ranks) {
        return Err(ProjectError::Ranks(max_ranks));
    }
    let room = mem_total.saturating_sub(in_use);
    let rows = (2..=max_ranks)
        .map(|n| match needed(n, peers, mirror) {
            Some(need) => Ok(Projection {
                ranks: n,
                needed: need,
                fits: need < room,
            }),
            None => Err(overflow(n, max_ranks, peers, mirror)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // `needed` grows with the rank count, so the first row that does not fit is where it stops.
    let first_bad = (2..=MAX_RANKS).find(|&n| needed(n, peers, mirror).is_none_or(|b| b >= room));
    Ok(Outlook {
        rows,
        first_bad,
        room,
    })
}

fn overflow(ranks: u32, max_ranks: u32, peers: Peers, mirror: u64) -> ProjectError {
    let per_mirror = u64::from(max_ranks) * u64::from(peers_per_rank(max_ranks, peers));
    ProjectError::Overflow {
        ranks,
        peers: peers_per_rank(ranks, peers),
        mirror,
        limit: u64::MAX / per_mirror.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const GIB: u64 = 1 << 30;

    #[test]
    fn hand_computed_cases() {
        // GSD-13036: 4 × 3 × 11.4 GiB.
        let mirror = (11.4 * GIB as f64) as u64;
        assert_eq!(needed(4, Peers::All, mirror), Some(12 * mirror));
        assert!(needed(4, Peers::All, mirror) > Some(60_000_000_000));
        // The seed: 2 × 1 × 17.7 GiB = 35.4 GiB, fits in 64 GiB beside 20 GiB of other use.
        let seed = (17.7 * GIB as f64) as u64;
        let Outlook {
            rows, first_bad, ..
        } = project(4, Peers::All, seed, 64 * GIB, 20 * GIB).unwrap();
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
        assert_eq!(needed(8, Peers::Ring, GIB), Some(16 * GIB));
    }

    #[test]
    fn table_of_cases_including_extremes() {
        const TIB: u64 = 1 << 40;
        // (max ranks, peers, mirror, MemTotal, in use, first that does not fit, rows that fit)
        type Case = (u32, Peers, u64, u64, u64, Option<u32>, usize);
        let cases: [Case; 7] = [
            (4, Peers::All, 17 * GIB, 64 * GIB, 20 * GIB, Some(3), 1),
            (8, Peers::Ring, GIB, 64 * GIB, 0, Some(32), 7),
            // --ranks 100: 92 × 91 × 1 MiB is the first to reach 8 GiB, past the old search's 64.
            (100, Peers::All, 1 << 20, 8 * GIB, 0, Some(92), 90),
            (2, Peers::All, 0, 0, 0, Some(2), 0),
            (1024, Peers::All, 0, GIB, 0, None, 1023),
            (
                1024,
                Peers::All,
                u64::MAX / (1024 * 1023),
                u64::MAX,
                0,
                None,
                1023,
            ),
            (2, Peers::Ring, 4_000_000 * TIB, u64::MAX, 0, Some(3), 1),
        ];
        for (max, peers, mirror, total, used, bad, fitting) in cases {
            let o = project(max, peers, mirror, total, used).unwrap();
            let what = format!("{max} {peers:?} {mirror} {total} {used}");
            assert_eq!(o.first_bad, bad, "{what}");
            assert_eq!(o.rows.len(), max as usize - 1, "{what}");
            assert_eq!(o.rows.iter().filter(|r| r.fits).count(), fitting, "{what}");
        }
    }

    #[test]
    fn absurd_sizes_are_an_error_not_a_wrap() {
        let mirror = 4_000_000u64 << 40; // --vram-per-rank 4000000TiB
        let e = project(8, Peers::All, mirror, 64 * GIB, 0).unwrap_err();
        assert!(
            matches!(e, ProjectError::Overflow { ranks: 3, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("exceeds 16 EiB"), "{e}");
        assert_eq!(needed(3, Peers::All, mirror), None);
        assert_eq!(project(1, Peers::All, 1, 1, 0), Err(ProjectError::Ranks(1)));
        assert_eq!(
            project(MAX_RANKS + 1, Peers::All, 1, 1, 0),
            Err(ProjectError::Ranks(MAX_RANKS + 1))
        );
    }

    proptest::proptest! {
        #[test]
        fn totals_grow_with_ranks_and_the_verdict_matches_the_rows(
            max in 2u32..=MAX_RANKS,
            ring in proptest::bool::ANY,
            mirror in proptest::num::u64::ANY,
            total in proptest::num::u64::ANY,
            used in proptest::num::u64::ANY,
        ) {
            let peers = if ring { Peers::Ring } else { Peers::All };
            match project(max, peers, mirror, total, used) {
                Ok(o) => {
                    for w in o.rows.windows(2) {
                        proptest::prop_assert!(w[0].needed <= w[1].needed);
                        proptest::prop_assert!(w[0].fits || !w[1].fits);
                    }
                    let first_row_bad = o.rows.iter().find(|r| !r.fits).map(|r| r.ranks);
                    match o.first_bad {
                        Some(n) if n <= max => proptest::prop_assert_eq!(first_row_bad, Some(n)),
                        _ => proptest::prop_assert!(o.rows.iter().all(|r| r.fits)),
                    }
                }
                Err(e) => {
                    let overflow = matches!(e, ProjectError::Overflow { .. });
                    proptest::prop_assert!(overflow, "{:?}", e);
                }
            }
        }
    }
}
