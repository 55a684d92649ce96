//! Lines from a recording's plot columns. A recording holds at most `PLOT_COLUMNS` (min, max)
//! columns per series whatever its length; they are merged further to the chart's pixel width,
//! so a 10 M-sample recording draws as a few hundred points per line.

use super::chart::{Line, PLOT_WIDTH};
use crate::findings::Kind;
use crate::ledger::MemClass;
use crate::recording::{ClassSeries, Recording};
use crate::timeline::RunSummary;
use std::collections::BTreeSet;

/// Bytes per GiB, the charts' unit.
pub const GIB: f64 = (1u64 << 30) as f64;

/// Seconds since the run's start of each plot column.
pub fn column_times(rec: &Recording) -> Vec<f64> {
    rec.host
        .columns
        .iter()
        .map(|c| c.t_ms.saturating_sub(rec.host.first_ms) as f64 / 1000.0)
        .collect()
}

/// (time, low, high) columns merged into at most [`PLOT_WIDTH`] buckets, then each bucket's low
/// and high point in that order (one point where they are equal).
pub fn downsample(times: &[f64], columns: impl Iterator<Item = (u64, u64)>) -> Vec<(f64, f64)> {
    let per = times.len().div_ceil(PLOT_WIDTH).max(1);
    let mut out = Vec::with_capacity(2 * PLOT_WIDTH);
    let mut bucket: Option<(f64, u64, u64)> = None;
    for (i, (&t, (lo, hi))) in times.iter().zip(columns).enumerate() {
        let b = bucket.get_or_insert((t, lo, hi));
        b.1 = b.1.min(lo);
        b.2 = b.2.max(hi);
        if (i + 1) % per == 0 || i + 1 == times.len() {
            let (t, lo, hi) = *b;
            out.push((t, lo as f64 / GIB));
            if hi != lo {
                out.push((t, hi as f64 / GIB));
            }
            bucket = None;
        }
    }
    out
}

/// Where a series grew by one of the step sizes stepwise_growth found for its process and device:
/// (time, height after the step).
fn steps_of(times: &[f64], s: &ClassSeries, summary: &RunSummary) -> Vec<(f64, f64)> {
    let cols: BTreeSet<usize> = summary
        .timeline
        .iter()
        .filter(|f| {
            f.finding.kind == Kind::StepwiseGrowth
                && f.finding.pid == Some(s.pid)
                && f.finding.device.as_deref() == Some(s.device.as_str())
        })
        .filter_map(|f| s.steps.get(&f.finding.bytes))
        .flat_map(|st| st.columns.iter().copied())
        .collect();
    cols.into_iter()
        .filter_map(|c| Some((*times.get(c)?, s.columns.get(c)?.1 as f64 / GIB)))
        .collect()
}

/// One run's line for a process's class on a device; `None` where it held none of it.
pub fn line(
    run: usize,
    rec: &Recording,
    summary: &RunSummary,
    (pid, device): (u32, &str),
    class: MemClass,
) -> Option<Line> {
    let s = rec.class_series(pid, device, class)?;
    if s.peak == 0 {
        return None;
    }
    let times = column_times(rec);
    Some(Line {
        run,
        points: downsample(&times, s.columns.iter().copied()),
        steps: steps_of(&times, s, summary),
    })
}

/// One run's host-wide line: MemAvailable or driver-held.
pub fn host_line(run: usize, rec: &Recording, driver_held: bool) -> Line {
    let times = column_times(rec);
    let cols = rec.host.columns.iter().map(|c| {
        if driver_held {
            c.driver_held
        } else {
            c.mem_available
        }
    });
    Line {
        run,
        points: downsample(&times, cols),
        steps: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsample_keeps_extremes_in_bounded_points() {
        let n: usize = 1000;
        let times: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let spike = 500;
        let cols = (0..n).map(|i| {
            if i == spike {
                (0, 8 << 30)
            } else {
                (1 << 30, 1 << 30)
            }
        });
        let pts = downsample(&times, cols);
        assert!(pts.len() <= 2 * PLOT_WIDTH, "{} points", pts.len());
        let max = pts.iter().map(|p| p.1).fold(0.0, f64::max);
        let min = pts.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        assert_eq!((min, max), (0.0, 8.0), "the spike and the dip survive");
        let last = pts.last().map_or(0.0, |p| p.0);
        assert!(
            last > 999.0 - n.div_ceil(PLOT_WIDTH) as f64,
            "the last bucket reaches the end: {last}"
        );
    }
}
