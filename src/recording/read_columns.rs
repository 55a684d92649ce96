//! A series' plot columns, kept as runs of equal columns: a series that holds one value for its
//! whole life costs one run, not one (min, max) pair per column, so a recording of many series
//! (or a file that claims many) reads in memory proportional to its changes.

/// (min, max) per plot column, stored as runs. Filled from left to right by [`PlotColumns::merge`];
/// columns never filled read as (0, 0).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlotColumns {
    len: usize,
    /// (first column, value) of each run, in column order; a run ends where the next begins.
    runs: Vec<(usize, (u64, u64))>,
    /// Columns below this have been filled.
    filled: usize,
}

/// What an unfilled column holds while filling (min above max: nothing seen).
const EMPTY: (u64, u64) = (u64::MAX, 0);

impl PlotColumns {
    /// `len` columns, none filled.
    pub(super) fn new(len: usize) -> Self {
        PlotColumns {
            len,
            runs: Vec::new(),
            filled: 0,
        }
    }

    /// How many columns there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no columns.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The (min, max) of column `c`.
    pub fn get(&self, c: usize) -> Option<&(u64, u64)> {
        if c >= self.len {
            return None;
        }
        let k = self.runs.partition_point(|r| r.0 <= c);
        Some(k.checked_sub(1).map_or(&(0, 0), |k| &self.runs[k].1))
    }

    /// Every column's (min, max), in order.
    pub fn iter(&self) -> impl Iterator<Item = &(u64, u64)> + '_ {
        let ends = self.runs.iter().skip(1).map(|r| r.0).chain([self.len]);
        let lead = self.runs.first().map_or(self.len, |r| r.0);
        std::iter::repeat_n(&(0, 0), lead).chain(
            self.runs
                .iter()
                .zip(ends)
                .flat_map(|(r, end)| std::iter::repeat_n(&r.1, end.saturating_sub(r.0))),
        )
    }

    /// Takes `v` into the min and max of columns `from..=to`. Calls come left to right: `from` is
    /// at least the last column of the previous call (a column shared by two calls is merged).
    pub(super) fn merge(&mut self, from: usize, to: usize, v: u64) {
        let to = to.min(self.len.saturating_sub(1));
        if from > to || self.len == 0 {
            return;
        }
        let mut start = from.max(self.filled);
        if from < self.filled {
            self.split_last();
            if let Some(last) = self.runs.last_mut() {
                last.1 = (last.1 .0.min(v), last.1 .1.max(v));
            }
        }
        if start > self.filled {
            self.push(self.filled, EMPTY);
        }
        if start <= to {
            self.push(start, (v, v));
            start = to + 1;
        }
        self.filled = self.filled.max(start);
    }

    /// Ends filling: columns never filled hold (0, 0).
    pub(super) fn finish(&mut self) {
        for r in &mut self.runs {
            if r.1 == EMPTY {
                r.1 = (0, 0);
            }
        }
        let runs = std::mem::take(&mut self.runs);
        for (start, v) in runs {
            self.push(start, v);
        }
        if self.filled < self.len {
            self.push(self.filled, (0, 0));
        }
        self.filled = self.len;
    }

    /// Makes the last filled column a run of its own.
    fn split_last(&mut self) {
        let last_col = self.filled - 1;
        if let Some(&(start, v)) = self.runs.last() {
            if start < last_col {
                self.runs.push((last_col, v));
            }
        }
    }

    /// Appends a run at `start`, or extends the last one when it holds the same value.
    fn push(&mut self, start: usize, v: (u64, u64)) {
        if self.runs.last().is_none_or(|r| r.1 != v) {
            self.runs.push((start, v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn runs_match_dense_columns(
            len in 0usize..40,
            raw in proptest::collection::vec((0usize..5, 0usize..5, 0u64..4), 0..30),
        ) {
            let mut c = PlotColumns::new(len);
            let mut dense = vec![EMPTY; len];
            let mut at = 0;
            for (step, width, v) in raw {
                // Left to right, each call starting at or after the last column of the previous.
                let from = at + step.saturating_sub(1);
                let to = from + width;
                c.merge(from, to, v);
                for d in dense.iter_mut().take(to + 1).skip(from) {
                    *d = (d.0.min(v), d.1.max(v));
                }
                at = to;
            }
            c.finish();
            let dense: Vec<_> = dense.into_iter().map(|d| if d == EMPTY { (0, 0) } else { d }).collect();
            prop_assert_eq!(c.iter().copied().collect::<Vec<_>>(), dense.clone());
            for (i, d) in dense.iter().enumerate() {
                prop_assert_eq!(c.get(i), Some(d));
            }
            prop_assert_eq!(c.get(len), None);
        }
    }

    #[test]
    fn a_flat_series_is_one_run() {
        let mut c = PlotColumns::new(1000);
        c.merge(0, 999, 5);
        c.finish();
        assert_eq!(c.runs.len(), 1);
        assert_eq!(c.iter().count(), 1000);
    }
}
