//! Folding a recording's host samples, in one pass in id order, into totals, extremes, plot
//! columns and the times of the few sample indices the analysis names.

use super::read_series::Columns;
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};

/// Host counters of one plot column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostColumn {
    /// Time of the column's first sample, ms since the epoch.
    pub t_ms: u64,
    /// MemAvailable (min, max); 0 where not known.
    pub mem_available: (u64, u64),
    /// Driver-held host memory (min, max): GPUActive when the kernel has it, else unaccounted.
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
    /// MemAvailable low point.
    pub mem_available_low: Option<u64>,
    /// Driver-held host memory peak (GPUActive, else unaccounted, per sample).
    pub driver_held_peak: Option<u64>,
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
    end_job: Option<usize>,
    wanted: &BTreeSet<usize>,
) -> rusqlite::Result<(HostSummary, BTreeMap<usize, u64>)> {
    let mut h = HostSummary::default();
    let mut times = BTreeMap::new();
    let mut columns: Vec<Option<HostColumn>> = vec![None; cols.len()];
    let (mut during, mut after) = (None, None);
    let mut st = conn.prepare(
        "SELECT id, t_ms, mem_available, gpu_active, unaccounted FROM samples ORDER BY id",
    )?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let i = cols.index(r.get(0)?);
        let t = r.get::<_, i64>(1)?.max(0) as u64;
        let (avail, gpu, unacc) = (u(r.get(2)?), u(r.get(3)?), u(r.get(4)?));
        let held = gpu.or(unacc);
        if h.samples == 0 {
            h.first_ms = t;
        }
        h.samples += 1;
        h.last_ms = t;
        h.mem_available_low = min_opt(h.mem_available_low, avail);
        h.driver_held_peak = max_opt(h.driver_held_peak, held);
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
