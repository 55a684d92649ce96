//! The bounded store of a job's evidence while it runs: pumps and the marker reader add to it,
//! the recorder takes what is new after each sample.

use super::{
    classify, stored_text, ErrorLine, Marker, OutputLine, RateSpec, Stream, Traceback,
    MAX_ERROR_LINES, MAX_MARKERS, MAX_RATE_POINTS, TAIL_LINES,
};
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// The collector, even when a pump panicked while holding it (what it held is still whole lines).
pub(super) fn lock(sink: &Mutex<Collector>) -> MutexGuard<'_, Collector> {
    sink.lock().unwrap_or_else(|e| e.into_inner())
}

/// What arrived since the last [`Collector::take`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Error lines.
    pub errors: Vec<ErrorLine>,
    /// Rate points: (index into the rate specs, t_ms, value).
    pub points: Vec<(usize, u64, f64)>,
    /// Markers.
    pub markers: Vec<Marker>,
}

impl Batch {
    /// Whether nothing arrived.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty() && self.points.is_empty() && self.markers.is_empty()
    }
}

/// Totals over the whole run, kept and dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lines seen on both streams.
    pub lines: u64,
    /// Error lines kept.
    pub errors_kept: usize,
    /// Error lines past [`MAX_ERROR_LINES`].
    pub errors_dropped: u64,
    /// Points kept per rate spec.
    pub points_kept: Vec<usize>,
    /// Points past [`MAX_RATE_POINTS`], per rate spec.
    pub points_dropped: Vec<u64>,
    /// Markers kept.
    pub markers_kept: usize,
    /// Markers past [`MAX_MARKERS`].
    pub markers_dropped: u64,
}

/// The evidence store of one run.
#[derive(Debug)]
pub struct Collector {
    rates: Vec<RateSpec>,
    pending: Batch,
    counts: Counts,
    tail: VecDeque<OutputLine>,
    tracebacks: [Traceback; 2],
}

impl Collector {
    /// An empty store that takes these rate series.
    pub fn new(rates: Vec<RateSpec>) -> Collector {
        let n = rates.len();
        Collector {
            rates,
            pending: Batch::default(),
            counts: Counts {
                points_kept: vec![0; n],
                points_dropped: vec![0; n],
                ..Counts::default()
            },
            tail: VecDeque::with_capacity(TAIL_LINES),
            tracebacks: Default::default(),
        }
    }

    /// Adds one complete line (at most `SCAN_BYTES` of it, without its newline).
    pub fn line(&mut self, stream: Stream, t_ms: u64, bytes: &[u8]) {
        self.counts.lines += 1;
        let scanned = String::from_utf8_lossy(bytes);
        let traceback = &mut self.tracebacks[stream as usize];
        let kind = if traceback.feed(&scanned) {
            Some(super::ErrorKind::PythonException)
        } else {
            classify(&scanned)
        };
        for (i, spec) in self.rates.iter().enumerate() {
            if let Some(v) = spec.value(&scanned) {
                if self.counts.points_kept[i] < MAX_RATE_POINTS {
                    self.counts.points_kept[i] += 1;
                    self.pending.points.push((i, t_ms, v));
                } else {
                    self.counts.points_dropped[i] += 1;
                }
            }
        }
        let line = OutputLine {
            t_ms,
            stream,
            text: stored_text(bytes),
        };
        if let Some(kind) = kind {
            if self.counts.errors_kept < MAX_ERROR_LINES {
                self.counts.errors_kept += 1;
                self.pending.errors.push(super::ErrorLine {
                    kind,
                    line: line.clone(),
                });
            } else {
                self.counts.errors_dropped += 1;
            }
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }

    /// Adds a marker.
    pub fn marker(&mut self, t_ms: u64, bytes: &[u8]) {
        if self.counts.markers_kept < MAX_MARKERS {
            self.counts.markers_kept += 1;
            self.pending.markers.push(Marker {
                t_ms,
                text: stored_text(bytes),
            });
        } else {
            self.counts.markers_dropped += 1;
        }
    }

    /// Takes what arrived since the last call.
    pub fn take(&mut self) -> Batch {
        std::mem::take(&mut self.pending)
    }

    /// The last lines, oldest first.
    pub fn tail(&self) -> Vec<OutputLine> {
        self.tail.iter().cloned().collect()
    }

    /// Totals so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }
}
