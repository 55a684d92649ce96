//! The job's own evidence, summarised once for every view: error lines and markers on the
//! recording's clock, each `--rate` series reduced to its count, median, first and last value, and
//! the one rule for whether two runs' throughput differs.

use crate::job_output::{ErrorKind, Stream};
use crate::recording::{RateSeries, Recording};
use serde::Serialize;

/// Two medians within this share of each other are the same throughput: run-to-run noise of a
/// training step is a few per cent, so a smaller difference is no claim the data support.
pub const THROUGHPUT_TOLERANCE: f64 = 0.05;

/// One error line, timed from the recording's start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorAt {
    /// Seconds from the first sample.
    pub t_s: f64,
    /// Stream.
    pub stream: Stream,
    /// What it matched.
    pub kind: ErrorKind,
    /// The line (raw: escape on display).
    pub text: String,
}

/// One marker, timed from the recording's start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarkerAt {
    /// Seconds from the first sample.
    pub t_s: f64,
    /// Its text (raw: escape on display).
    pub text: String,
}

/// One rate series, reduced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateStats {
    /// Name.
    pub name: String,
    /// Unit, when given.
    pub unit: Option<String>,
    /// Points kept.
    pub n: usize,
    /// Points past the bound.
    pub dropped: u64,
    /// Median of the kept points.
    pub median: Option<f64>,
    /// First value.
    pub first: Option<f64>,
    /// Last value.
    pub last: Option<f64>,
}

/// What the job's output showed.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct EvidenceSummary {
    /// Whether the output was captured (a started command, schema 4).
    pub captured: bool,
    /// Lines seen.
    pub lines: u64,
    /// Error lines kept, in time order.
    pub errors: Vec<ErrorAt>,
    /// Error lines past the bound.
    pub errors_dropped: u64,
    /// The last lines of output (raw).
    pub tail: Vec<String>,
    /// Rate series.
    pub rates: Vec<RateStats>,
    /// Markers.
    pub markers: Vec<MarkerAt>,
}

/// How two runs' rate medians compare.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "change")]
pub enum RateChange {
    /// Within [`THROUGHPUT_TOLERANCE`].
    Same,
    /// B's median relative to A's, minus one (0.33 = a third more).
    Differs {
        /// The relative change.
        relative: f64,
    },
    /// One run has no value, or A's is zero.
    Unknown,
}

/// Compares two medians.
pub fn compare_medians(a: Option<f64>, b: Option<f64>) -> RateChange {
    match (a, b) {
        (Some(x), Some(y)) if x != 0.0 => {
            let relative = y / x - 1.0;
            if relative.abs() <= THROUGHPUT_TOLERANCE {
                RateChange::Same
            } else {
                RateChange::Differs { relative }
            }
        }
        _ => RateChange::Unknown,
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn stats(r: &RateSeries) -> RateStats {
    let values: Vec<f64> = r.points.iter().map(|p| p.1).collect();
    RateStats {
        name: r.name.clone(),
        unit: r.unit.clone(),
        n: values.len(),
        dropped: r.dropped,
        median: median(&values),
        first: values.first().copied(),
        last: values.last().copied(),
    }
}

impl EvidenceSummary {
    /// Summarises a recording's evidence.
    pub fn of(rec: &Recording) -> EvidenceSummary {
        let e = &rec.evidence;
        let base = match rec.host.first_ms {
            0 => rec
                .meta
                .get("started_ms")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            t => t,
        };
        // Lines read before the first sample are said to be at its time.
        let t_s = |t: u64| t.saturating_sub(base) as f64 / 1000.0;
        EvidenceSummary {
            captured: e.captured,
            lines: e.lines,
            errors: e
                .errors
                .iter()
                .map(|l| ErrorAt {
                    t_s: t_s(l.line.t_ms),
                    stream: l.line.stream,
                    kind: l.kind,
                    text: l.line.text.clone(),
                })
                .collect(),
            errors_dropped: e.errors_dropped,
            tail: e.tail.iter().map(|l| l.text.clone()).collect(),
            rates: e.rates.iter().map(stats).collect(),
            markers: e
                .markers
                .iter()
                .map(|m| MarkerAt {
                    t_s: t_s(m.t_ms),
                    text: m.text.clone(),
                })
                .collect(),
        }
    }

    /// The rate series of a name.
    pub fn rate(&self, name: &str) -> Option<&RateStats> {
        self.rates.iter().find(|r| r.name == name)
    }

    /// Error lines seen in all, kept or not.
    pub fn error_count(&self) -> u64 {
        self.errors.len() as u64 + self.errors_dropped
    }
}

/// A value the way the seed report writes it: `~3.0 s/wave`.
pub fn approx(value: f64, unit: Option<&str>) -> String {
    let v = if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    };
    match unit {
        Some(u) => format!("~{v} {u}"),
        None => format!("~{v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_the_five_percent_rule() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(compare_medians(Some(3.0), Some(3.1)), RateChange::Same);
        assert_eq!(compare_medians(Some(3.0), Some(3.0)), RateChange::Same);
        match compare_medians(Some(3.0), Some(4.0)) {
            RateChange::Differs { relative } => assert!((relative - 1.0 / 3.0).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            compare_medians(Some(3.0), Some(3.2)),
            RateChange::Differs {
                relative: 3.2 / 3.0 - 1.0
            }
        );
        assert_eq!(compare_medians(None, Some(3.0)), RateChange::Unknown);
        assert_eq!(approx(3.04, Some("s/wave")), "~3.0 s/wave");
    }
}
