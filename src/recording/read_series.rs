//! Folding a recording's usage points into per (pid, device, class) summaries in one ordered pass
//! per series group, without ever holding one value per sample.

use super::read_columns::PlotColumns;
use super::PLOT_COLUMNS;
use crate::ledger::MemClass;
use rusqlite::{Connection, Rows};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Least size of a growth step kept per series (ignores allocator noise).
pub const MIN_STEP_BYTES: u64 = 16 << 20;
/// Distinct step sizes kept per series; further new sizes are not tracked, so a recording whose
/// every sample grows by a new amount still takes bounded memory.
const MAX_STEP_SIZES: usize = 1024;

/// Least width of the band a hold keeps to: a level is held while the series stays between it
/// and this many bytes above it (allocator noise does not end a hold).
pub const HOLD_BAND: u64 = MIN_STEP_BYTES;

/// A stretch of a process's life over which a series held one level: its value at `from` and
/// at most [`HOLD_BAND`] above it at every sample to `to` (sample indices, inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// The level: the series' value at `from`, and the least value of the stretch.
    pub value: u64,
    /// First sample index.
    pub from: usize,
    /// Last sample index.
    pub to: usize,
    /// Whether the series rose to it (false for the life's first level and for a level it
    /// fell to).
    pub rose: bool,
}

impl Hold {
    /// Samples it lasted.
    pub fn samples(self) -> usize {
        self.to - self.from + 1
    }

    fn keeps(self, v: u64) -> bool {
        v >= self.value && v - self.value <= HOLD_BAND
    }
}

/// One growth step size of a series.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Step {
    /// How many times the series grew by exactly this many bytes.
    pub count: usize,
    /// Sample index of the first such growth.
    pub first: usize,
    /// Plot columns in which it grew by this size.
    pub columns: Vec<usize>,
}

/// The sum of a process's resident bytes of one class on one device, as the sample-by-sample
/// series it is (filled forward, 0 before its first point and after the process left), summed up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSeries {
    /// Pid.
    pub pid: u32,
    /// Device id.
    pub device: String,
    /// Class.
    pub class: MemClass,
    /// Highest value.
    pub peak: u64,
    /// Value at the process's first sample.
    pub start: u64,
    /// Value at the process's last sample.
    pub end: u64,
    /// Whether it never fell during the process's life.
    pub monotone: bool,
    /// Growths by more than [`MIN_STEP_BYTES`] from one sample to the next during the life.
    pub ups: usize,
    /// Sample index of the last such growth.
    pub last_up: Option<usize>,
    /// Those growths by size.
    pub steps: BTreeMap<u64, Step>,
    /// (min, max) per plot column (sample index × columns / samples).
    pub columns: PlotColumns,
    /// The longest hold of the life (the higher level of two as long, then the earlier).
    pub longest: Option<Hold>,
    /// The last hold of the life (it ends at the life's last sample).
    pub last_hold: Option<Hold>,
    /// The hold before the last one.
    pub before_last: Option<Hold>,
}

/// Sample id → sample index → plot column, for a recording whose ids run from `first_id` over
/// `span` indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Columns {
    pub first_id: i64,
    pub span: usize,
}

impl Columns {
    /// The sample index of a sample id (clamped into the recording).
    pub fn index(self, id: i64) -> usize {
        usize::try_from(id.saturating_sub(self.first_id))
            .unwrap_or(0)
            .min(self.span.saturating_sub(1))
    }

    /// How many columns there are.
    pub fn len(self) -> usize {
        self.span.min(PLOT_COLUMNS)
    }

    /// The column of a sample index.
    pub fn of(self, i: usize) -> usize {
        (i as u128 * self.len() as u128 / self.span.max(1) as u128) as usize
    }
}

/// The life of a process in sample indices (inclusive).
#[derive(Debug, Clone, Copy)]
pub(super) struct Life {
    pub first: usize,
    pub last: usize,
}

struct Fold {
    s: ClassSeries,
    life: Life,
    cols: Columns,
    value: u64,
    at: usize,
    run: Option<Hold>,
}

impl Fold {
    fn fill(&mut self, from: usize, to: usize, v: u64) {
        if from > to {
            return;
        }
        self.s
            .columns
            .merge(self.cols.of(from), self.cols.of(to), v);
    }

    /// The value becomes `v` at sample index `i` (indices never go back).
    fn change(&mut self, i: usize, v: u64) {
        if i > self.life.last {
            return;
        }
        let i = i.max(self.at);
        if i > self.at {
            self.fill(self.at, i - 1, self.value);
        }
        if i > self.life.first && i > self.at {
            self.hold(i, v);
            let old = self.value;
            if v > old.saturating_add(MIN_STEP_BYTES) {
                self.up(i, v - old);
            } else if v < old {
                self.s.monotone = false;
            }
        }
        if i <= self.life.first {
            self.s.start = v;
        }
        self.value = v;
        self.at = i;
        self.s.peak = self.s.peak.max(v);
    }

    /// The value becomes `v` at index `i` within the life (after its first sample): the running
    /// hold goes on while `v` keeps to its band, else it ends at `i - 1` and `v` starts one.
    fn hold(&mut self, i: usize, v: u64) {
        let run = self.run.get_or_insert(Hold {
            value: self.s.start,
            from: self.life.first,
            to: self.life.first,
            rose: false,
        });
        if run.keeps(v) {
            return;
        }
        let closed = Hold { to: i - 1, ..*run };
        *run = Hold {
            value: v,
            from: i,
            to: i,
            rose: v > run.value,
        };
        self.close(closed);
    }

    fn close(&mut self, h: Hold) {
        let longer = |b: &Hold| (h.samples(), h.value) > (b.samples(), b.value);
        if self.s.longest.as_ref().is_none_or(longer) {
            self.s.longest = Some(h);
        }
        self.s.before_last = self.s.last_hold.replace(h);
    }

    fn up(&mut self, i: usize, by: u64) {
        self.s.ups += 1;
        self.s.last_up = Some(i);
        let col = self.cols.of(i);
        if self.s.steps.len() >= MAX_STEP_SIZES && !self.s.steps.contains_key(&by) {
            return;
        }
        let step = self.s.steps.entry(by).or_insert(Step {
            first: i,
            ..Step::default()
        });
        step.count += 1;
        if step.columns.last() != Some(&col) {
            step.columns.push(col);
        }
    }

    fn finish(mut self) -> ClassSeries {
        self.fill(self.at, self.life.last, self.value);
        let run = self.run.take().unwrap_or(Hold {
            value: self.s.start,
            from: self.life.first,
            to: self.life.first,
            rose: false,
        });
        self.close(Hold {
            to: self.life.last,
            ..run
        });
        let after = self.life.last.saturating_add(1);
        if after < self.cols.span {
            self.fill(after, self.cols.span - 1, 0);
        }
        self.s.end = self.value;
        self.s.columns.finish();
        self.s
    }
}

fn next_point(rows: &mut Rows, cols: Columns) -> rusqlite::Result<Option<(usize, u64)>> {
    Ok(match rows.next()? {
        Some(r) => {
            let v: Option<i64> = r.get(1)?;
            Some((cols.index(r.get(0)?), v.unwrap_or(0).max(0) as u64))
        }
        None => None,
    })
}

/// Folds the series `ids` (the regions of one class of one process on one device) into one
/// summary, merging their points in sample order: a heap of each series' next sample and a running
/// sum, so each point costs O(log regions).
pub(super) fn fold_group(
    conn: &Connection,
    (pid, device, class): (u32, String, MemClass),
    ids: &[i64],
    life: Life,
    cols: Columns,
) -> rusqlite::Result<ClassSeries> {
    // One cached statement per cursor position (the comment makes each its own cache entry):
    // a recording of many small groups prepares each statement once, not once per group.
    let mut stmts = (0..ids.len())
        .map(|k| {
            conn.prepare_cached(&format!(
                "SELECT sample, resident FROM points WHERE series = ?1 ORDER BY sample -- {k}"
            ))
        })
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut rows = stmts
        .iter_mut()
        .zip(ids)
        .map(|(st, id)| st.query([id]))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut heads = rows
        .iter_mut()
        .map(|r| next_point(r, cols))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut next: BinaryHeap<Reverse<(usize, usize)>> = heads
        .iter()
        .enumerate()
        .filter_map(|(k, h)| h.map(|h| Reverse((h.0, k))))
        .collect();
    let mut current = vec![0u64; ids.len()];
    let mut sum: u128 = 0;
    let mut fold = Fold {
        s: ClassSeries {
            pid,
            device,
            class,
            peak: 0,
            start: 0,
            end: 0,
            monotone: true,
            ups: 0,
            last_up: None,
            steps: BTreeMap::new(),
            columns: PlotColumns::new(cols.len()),
            longest: None,
            last_hold: None,
            before_last: None,
        },
        life,
        cols,
        value: 0,
        at: 0,
        run: None,
    };
    while let Some(&Reverse((i, _))) = next.peek() {
        while let Some(&Reverse((j, k))) = next.peek() {
            if j != i {
                break;
            }
            next.pop();
            while let Some((_, v)) = heads[k].filter(|h| h.0 <= i) {
                sum = sum - u128::from(current[k]) + u128::from(v);
                current[k] = v;
                heads[k] = next_point(&mut rows[k], cols)?;
            }
            if let Some(h) = heads[k] {
                next.push(Reverse((h.0, k)));
            }
        }
        fold.change(i, u64::try_from(sum).unwrap_or(u64::MAX));
    }
    Ok(fold.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fold(changes: &[(usize, u64)], life: Life, span: usize) -> ClassSeries {
        let cols = Columns { first_id: 1, span };
        let mut f = Fold {
            s: ClassSeries {
                pid: 1,
                device: "d".into(),
                class: MemClass::Host,
                peak: 0,
                start: 0,
                end: 0,
                monotone: true,
                ups: 0,
                last_up: None,
                steps: BTreeMap::new(),
                columns: PlotColumns::new(cols.len()),
                longest: None,
                last_hold: None,
                before_last: None,
            },
            life,
            cols,
            value: 0,
            at: 0,
            run: None,
        };
        for &(i, v) in changes {
            f.change(i, v);
        }
        f.finish()
    }

    /// The dense series the fold stands for: filled forward, 0 before the first change and
    /// after the life.
    fn dense(changes: &[(usize, u64)], life: Life, span: usize) -> Vec<u64> {
        let mut v = vec![0; span];
        for &(i, x) in changes.iter().filter(|c| c.0 <= life.last) {
            v[i..=life.last].iter_mut().for_each(|s| *s = x);
        }
        v
    }

    /// The holds of a dense life, cut where a value leaves the band of its hold's first value.
    fn dense_holds(lived: &[u64], first: usize) -> Vec<Hold> {
        let mut out: Vec<Hold> = Vec::new();
        for (k, &v) in lived.iter().enumerate() {
            match out.last_mut() {
                Some(h) if v >= h.value && v - h.value <= HOLD_BAND => h.to = first + k,
                last => {
                    let rose = last.is_some_and(|h| v > h.value);
                    out.push(Hold {
                        value: v,
                        from: first + k,
                        to: first + k,
                        rose,
                    })
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn fold_matches_the_dense_series(
            span in 2usize..3000,
            raw in proptest::collection::vec((0usize..3000, 0u64..6, 0u64..3), 0..60),
            a in 0usize..3000,
            b in 0usize..3000,
        ) {
            let (first, last) = (a.min(b) % span, a.max(b) % span);
            let life = Life { first: first.min(last), last: first.max(last) };
            let mut changes: Vec<(usize, u64)> = raw.iter().map(|(i, x, n)| (i % span, x * (20 << 20) + n * (8 << 20))).collect();
            changes.sort_by_key(|c| c.0);
            changes.dedup_by_key(|c| c.0);
            let s = fold(&changes, life, span);
            let v = dense(&changes, life, span);
            let lived = &v[life.first..=life.last];
            prop_assert_eq!(s.peak, v.iter().copied().max().unwrap_or(0));
            prop_assert_eq!((s.start, s.end), (lived[0], lived[lived.len() - 1]));
            prop_assert_eq!(s.monotone, lived.windows(2).all(|w| w[1] >= w[0]));
            let ups: Vec<(usize, u64)> = lived.windows(2).enumerate()
                .filter(|(_, w)| w[1] > w[0] + MIN_STEP_BYTES)
                .map(|(i, w)| (life.first + i + 1, w[1] - w[0])).collect();
            prop_assert_eq!(s.ups, ups.len());
            prop_assert_eq!(s.last_up, ups.last().map(|u| u.0));
            for (size, step) in &s.steps {
                let of: Vec<_> = ups.iter().filter(|u| u.1 == *size).collect();
                prop_assert_eq!(step.count, of.len());
                prop_assert_eq!(step.first, of[0].0);
            }
            let cols = Columns { first_id: 1, span };
            let mut expect = vec![(u64::MAX, 0); cols.len()];
            for (i, x) in v.iter().enumerate() {
                let e = &mut expect[cols.of(i)];
                *e = (e.0.min(*x), e.1.max(*x));
            }
            prop_assert_eq!(s.columns.iter().copied().collect::<Vec<_>>(), expect);
            let holds = dense_holds(lived, life.first);
            let longest = holds.iter().copied().reduce(|b, h| {
                if (h.samples(), h.value) > (b.samples(), b.value) { h } else { b }
            });
            prop_assert_eq!(s.longest, longest);
            prop_assert_eq!(s.last_hold, holds.last().copied());
            prop_assert_eq!(s.before_last, holds.len().checked_sub(2).map(|k| holds[k]));
        }
    }
}
