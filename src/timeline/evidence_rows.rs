//! The diff rows from the jobs' own evidence: each throughput series' median (the seed report's
//! "~3.0 s/wave vs ~3.0 s/wave") and the first runtime error of each run.

use super::diff_row::{RateValue, Row, Value};
use super::evidence::{compare_medians, RateChange};
use super::RunSummary;

/// Characters of an error line a diff cell shows.
const ERROR_CELL: usize = 100;

/// The names of the rate series either run has, A's first.
fn names<'a>(a: &'a RunSummary, b: &'a RunSummary) -> Vec<&'a str> {
    let mut names: Vec<&str> = a.evidence.rates.iter().map(|r| r.name.as_str()).collect();
    for r in &b.evidence.rates {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    names
}

/// Whether each series' medians differ by more than the tolerance.
pub(super) fn changes(a: &RunSummary, b: &RunSummary) -> Vec<(String, RateChange)> {
    let median = |s: &RunSummary, n: &str| s.evidence.rate(n).and_then(|r| r.median);
    names(a, b)
        .into_iter()
        .map(|n| (n.to_string(), compare_medians(median(a, n), median(b, n))))
        .collect()
}

/// Throughput rows for every series either run has, then the first-error row when either run
/// captured its output.
pub(super) fn rows(a: &RunSummary, b: &RunSummary) -> Vec<Row> {
    let (ea, eb) = (&a.evidence, &b.evidence);
    let mut rows: Vec<Row> = names(a, b)
        .into_iter()
        .map(|name| {
            let unit = ea.rate(name).or(eb.rate(name)).and_then(|r| r.unit.clone());
            let value = |s: &RunSummary| {
                Value::Rate(RateValue {
                    median: s.evidence.rate(name).and_then(|r| r.median),
                    unit: unit.clone(),
                })
            };
            Row {
                what: format!("throughput {name} (median)"),
                a: value(a),
                b: value(b),
            }
        })
        .collect();
    if ea.captured || eb.captured {
        rows.push(Row {
            what: "first runtime error in the job's output".into(),
            a: first_error(a),
            b: first_error(b),
        });
    }
    rows
}

fn first_error(s: &RunSummary) -> Value {
    let e = &s.evidence;
    Value::Text(match e.errors.first() {
        None if !e.captured => "not captured".into(),
        None => "none".into(),
        Some(l) => {
            let text: String = l.text.chars().take(ERROR_CELL).collect();
            format!("{}: {text}", l.kind.as_str())
        }
    })
}
