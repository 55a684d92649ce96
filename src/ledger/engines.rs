//! Engine utilisation per process × device × engine class, from two samples of the clients'
//! fdinfo counters (Documentation/gpu/drm-usage-stats.rst): where the driver gives
//! `drm-cycles-<e>` and `drm-total-cycles-<e>` (xe), busy cycles over elapsed GPU cycles;
//! otherwise `drm-engine-<e>` busy nanoseconds over the wall time between the samples. Either is
//! divided by `drm-engine-capacity-<e>` (engines of the class) where given. A client seen once has
//! no utilisation yet; a counter that went backwards (a reused client id) gives none.

use super::{Client, Ledger};
use crate::sources::drm_fdinfo::EngineStats;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// How busy one engine class of a device was for a process between two samples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineUse {
    /// Device id.
    pub device: String,
    /// Engine class as the driver names it (`rcs`, `ccs`, `gfx`, `render`, …).
    pub engine: String,
    /// Busy share in tenths of a per cent (0–1000), summed over the process's clients there.
    pub permille: u32,
    /// What it was computed from.
    pub basis: EngineBasis,
}

impl EngineUse {
    /// The share in per cent.
    pub fn percent(&self) -> f64 {
        f64::from(self.permille) / 10.0
    }
}

/// Which counters a utilisation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineBasis {
    /// `drm-cycles-<e>` over `drm-total-cycles-<e>`.
    Cycles,
    /// `drm-engine-<e>` nanoseconds over wall time.
    BusyTime,
}

/// The busiest engine class of `uses` on `device` (on any device when `None`), as the table
/// shows it: `ccs 42%`; `-` where no utilisation is known yet.
pub fn busiest_label(uses: &[EngineUse], device: Option<&str>) -> String {
    uses.iter()
        .filter(|u| device.is_none_or(|d| u.device == d))
        .max_by_key(|u| u.permille)
        .map(|u| format!("{} {:.0}%", u.engine, u.percent()))
        .unwrap_or_else(|| "-".into())
}

type ClientKey = (String, u64);

/// One process's busy share and basis by (device, engine class).
type PerEngine = BTreeMap<(String, String), (u32, EngineBasis)>;

/// The previous sample's engine counters of every client, to difference the next against.
#[derive(Debug, Default, Clone)]
pub struct EngineClock {
    previous: HashMap<ClientKey, (u64, BTreeMap<String, EngineStats>)>,
}

impl EngineClock {
    /// Fills each process row's `engines` from the change since the last ledger given, and keeps
    /// this ledger's counters for the next.
    pub fn apply(&mut self, ledger: &mut Ledger) {
        let now = ledger.time_ms;
        let mut by_pid: BTreeMap<u32, PerEngine> = BTreeMap::new();
        for c in &ledger.clients {
            let Some(id) = c.client_id else { continue };
            let Some((then, before)) = self.previous.get(&(c.device.clone(), id)) else {
                continue;
            };
            let wall_ns = now.saturating_sub(*then).saturating_mul(1_000_000);
            for (engine, stats) in &c.engines {
                let Some(used) = before.get(engine).and_then(|b| busy(b, stats, wall_ns)) else {
                    continue;
                };
                let slot = by_pid
                    .entry(c.owner)
                    .or_default()
                    .entry((c.device.clone(), engine.clone()))
                    .or_insert((0, used.1));
                slot.0 = (slot.0 + used.0).min(1000);
            }
        }
        for row in &mut ledger.processes {
            row.engines = by_pid
                .remove(&row.pid)
                .unwrap_or_default()
                .into_iter()
                .map(|((device, engine), (permille, basis))| EngineUse {
                    device,
                    engine,
                    permille,
                    basis,
                })
                .collect();
        }
        self.previous = ledger
            .clients
            .iter()
            .filter_map(|c: &Client| {
                Some(((c.device.clone(), c.client_id?), (now, c.engines.clone())))
            })
            .collect();
    }
}

/// The busy share (per mille) of one engine class between two readings `wall_ns` apart.
fn busy(before: &EngineStats, after: &EngineStats, wall_ns: u64) -> Option<(u32, EngineBasis)> {
    let capacity = after.capacity.unwrap_or(1).max(1) as f64;
    let share = |num: u64, den: u64| -> Option<u32> {
        (den > 0).then(|| ((num as f64 / den as f64 / capacity * 1000.0).round() as u32).min(1000))
    };
    if let (Some(c0), Some(c1), Some(t0), Some(t1)) = (
        before.cycles,
        after.cycles,
        before.total_cycles,
        after.total_cycles,
    ) {
        let (dc, dt) = (c1.checked_sub(c0)?, t1.checked_sub(t0)?);
        return share(dc, dt).map(|p| (p, EngineBasis::Cycles));
    }
    let d = after.busy_ns?.checked_sub(before.busy_ns?)?;
    share(d, wall_ns).map(|p| (p, EngineBasis::BusyTime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ns(busy: u64) -> EngineStats {
        EngineStats {
            busy_ns: Some(busy),
            ..Default::default()
        }
    }

    #[test]
    fn busy_time_over_wall_time_divided_by_capacity() {
        // 50 ms busy in 100 ms: 50 %.
        assert_eq!(
            busy(&ns(1_000_000_000), &ns(1_050_000_000), 100_000_000),
            Some((500, EngineBasis::BusyTime))
        );
        let two = EngineStats {
            capacity: Some(2),
            ..ns(1_100_000_000)
        };
        assert_eq!(busy(&ns(1_000_000_000), &two, 100_000_000).unwrap().0, 500);
        // A counter that went back (a reused client id) gives nothing.
        assert_eq!(busy(&ns(5), &ns(4), 100), None);
        // No time between the samples gives nothing.
        assert_eq!(busy(&ns(0), &ns(10), 0), None);
    }

    #[test]
    fn cycles_over_total_cycles_win_where_the_driver_gives_them() {
        let at = |c: u64, t: u64| EngineStats {
            cycles: Some(c),
            total_cycles: Some(t),
            busy_ns: Some(0),
            ..Default::default()
        };
        assert_eq!(
            busy(&at(100, 1000), &at(350, 2000), 1),
            Some((250, EngineBasis::Cycles))
        );
    }

    proptest! {
        #[test]
        fn a_share_is_never_above_100_percent(
            b0 in 0u64..1 << 50, db in 0u64..1 << 40, wall in 1u64..1 << 40, cap in 0u64..16
        ) {
            let after = EngineStats { capacity: Some(cap), ..ns(b0 + db) };
            if let Some((p, _)) = busy(&ns(b0), &after, wall) {
                prop_assert!(p <= 1000);
            }
        }
    }
}
