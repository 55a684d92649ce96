//! Folding a recording's host samples, in one pass in id order, into totals, extremes, plot
//! columns and the times of the few sample indices the analysis names.

use super::names;
use super::read_rows::Layout;
use super::read_series::Columns;
use crate::ledger::{DriverHeld, HostTotals};
use rusqlite::{Connection, Row};
use std::collections::{BTreeMap, BTreeSet};

/// Host counters of one plot column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostColumn {
    /// Time of the column's first sample, ms since the epoch.
    pub t_ms: u64,
    /// MemAvailable (min, max); 0 where not known.
    pub mem_available: (u64, u64),
    /// Driver-held host memory (min, max), the ledger's definition as recorded per sample.
    pub driver_held: (u64, u64),
}

/// The host counters of a whole recording.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostSummary {
    /// Samples in the file.
    pub samples: u64,
    /// Time of the first sample, ms since the epoch.
    pub first_ms: u64,
    /// Time of the last sample.
    pub last_ms: u64,
    /// The longest time between two consecutive samples, ms.
    pub longest_gap_ms: u64,
    /// MemTotal as last recorded.
    pub mem_total: Option<u64>,
    /// MemAvailable low point.
    pub mem_available_low: Option<u64>,
    /// Driver-held host memory at its peak sample, with its parts (the ledger's
    /// `HostTotals::driver_held` as recorded; for version 1 and 2 files rebuilt from the counters
    /// they kept, which lack attributed pinned shmem).
    pub driver_held_peak: Option<DriverHeld>,
    /// GPUActive peak.
    pub gpu_active_peak: Option<u64>,
    /// Unaccounted peak.
    pub unaccounted_peak: Option<u64>,
    /// Driver-held peak up to the last sample any process was seen in, and its low after it
    /// (both known only when samples follow the job).
    pub held_around_exit: Option<(u64, u64)>,
    /// At most `PLOT_COLUMNS` columns.
    pub columns: Vec<HostColumn>,
}

fn u(v: Option<i64>) -> Option<u64> {
    v.map(|x| x.max(0) as u64)
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.max(b)
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// Reads the host summary; `end_job` is the last sample index any process was seen in, `wanted`
/// the sample indices whose times the caller needs (returned by index).
pub(super) fn fold_host(
    conn: &Connection,
    cols: Columns,
    layout: Layout,
    end_job: Option<usize>,
    wanted: &BTreeSet<usize>,
) -> rusqlite::Result<(HostSummary, BTreeMap<usize, u64>)> {
    let mut h = HostSummary::default();
    let mut times = BTreeMap::new();
    let mut columns: Vec<Option<HostColumn>> = vec![None; cols.len()];
    let (mut during, mut after) = (None, None);
    let held_columns = if layout.has_driver_held() {
        "driver_held, held_counter, held_counter_bytes, pinned_shmem"
    } else {
        "NULL, NULL, NULL, NULL"
    };
    let mut st = conn.prepare(&format!(
        "SELECT id, t_ms, mem_available, gpu_active, unaccounted, gpu_source, {held_columns}, mem_total, gpu_reclaim FROM samples ORDER BY id",
    ))?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let i = cols.index(r.get(0)?);
        let t = r.get::<_, i64>(1)?.max(0) as u64;
        let (avail, gpu, unacc) = (u(r.get(2)?), u(r.get(3)?), u(r.get(4)?));
        let parts = driver_held(r, layout)?;
        if parts.map(|p| p.bytes) > h.driver_held_peak.map(|p| p.bytes) {
            h.driver_held_peak = parts;
        }
        let held = parts.map(|p| p.bytes);
        if h.samples == 0 {
            h.first_ms = t;
        } else {
            h.longest_gap_ms = h.longest_gap_ms.max(t.saturating_sub(h.last_ms));
        }
        h.samples += 1;
        h.last_ms = t;
        h.mem_available_low = min_opt(h.mem_available_low, avail);
        h.mem_total = u(r.get(10)?).or(h.mem_total);
        h.gpu_active_peak = max_opt(h.gpu_active_peak, gpu);
        h.unaccounted_peak = max_opt(h.unaccounted_peak, unacc);
        match end_job {
            Some(e) if i <= e => during = max_opt(during, held),
            Some(_) => after = min_opt(after, held),
            None => {}
        }
        if wanted.contains(&i) {
            times.entry(i).or_insert(t);
        }
        if let Some(slot) = columns.get_mut(cols.of(i)) {
            let (a, d) = (avail.unwrap_or(0), held.unwrap_or(0));
            let c = slot.get_or_insert(HostColumn {
                t_ms: t,
                mem_available: (a, a),
                driver_held: (d, d),
            });
            c.mem_available = (c.mem_available.0.min(a), c.mem_available.1.max(a));
            c.driver_held = (c.driver_held.0.min(d), c.driver_held.1.max(d));
        }
    }
    h.held_around_exit = during.zip(after);
    h.columns = fill_gaps(columns, &h);
    Ok((h, times))
}

/// The sample's driver-held host memory: as recorded (version 3), else the ledger's definition
/// applied to the counters the file kept.
fn driver_held(r: &Row, layout: Layout) -> rusqlite::Result<Option<DriverHeld>> {
    let (gpu, unacc) = (u(r.get(3)?), u(r.get(4)?));
    if !layout.has_driver_held() {
        let totals = HostTotals {
            gpu_active: gpu,
            gpu_reclaim: u(r.get(11)?),
            gpu_active_source: r.get(5)?,
            unaccounted: unacc,
            ..HostTotals::default()
        };
        return Ok(totals.driver_held());
    }
    let (Some(bytes), Some(name)) = (u(r.get(6)?), r.get::<_, Option<String>>(7)?) else {
        return Ok(None);
    };
    let counter = names::counter(&name).map_err(|e| names::conversion(7, e))?;
    let counter_bytes = u(r.get(8)?).unwrap_or(bytes);
    let mem_total = u(r.get(10)?);
    // A pool larger than MemTotal is a kernel counter fault (ledger::CounterFault): not named.
    let reclaimable_pool = match counter {
        crate::ledger::HeldCounter::Unaccounted => None,
        _ => u(r.get(11)?).filter(|p| mem_total.is_none_or(|t| *p <= t)),
    };
    let other_unaccounted = match counter {
        crate::ledger::HeldCounter::Unaccounted => None,
        _ => unacc.map(|x| {
            x.saturating_sub(counter_bytes)
                .saturating_sub(reclaimable_pool.unwrap_or(0))
        }),
    };
    Ok(Some(DriverHeld {
        bytes,
        counter,
        counter_bytes,
        pinned_shmem: u(r.get(9)?).unwrap_or(0),
        reclaimable_pool,
        other_unaccounted,
    }))
}

/// Columns with no sample (ids with gaps) take the previous column's values.
fn fill_gaps(columns: Vec<Option<HostColumn>>, h: &HostSummary) -> Vec<HostColumn> {
    let mut prev = HostColumn {
        t_ms: h.first_ms,
        ..HostColumn::default()
    };
    columns
        .into_iter()
        .map(|c| {
            prev = c.unwrap_or(prev);
            prev
        })
        .collect()
}
