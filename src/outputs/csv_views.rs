//! `--format csv` of `show`, `diff` and `doctor`: each view's one table of rows, header first,
//! numbers as plain integers or decimals (no units in a cell; the unit has its own column where
//! rows mix units), an empty field where a value is unknown. Quoting is the `csv` crate's; text
//! goes through [`safe`] as in the snapshot's CSV.

use super::csv::CsvError;
use super::safe_text::safe;
use crate::doctor::Report;
use crate::timeline::diff::{Diff, Value};
use crate::timeline::RunSummary;

/// The header of `show --format csv`.
pub const SHOW_HEADER: [&str; 7] = [
    "recording",
    "pid",
    "rank",
    "device",
    "home",
    "device_local_peak",
    "host_peak",
];

/// The header of `diff --format csv`.
pub const DIFF_HEADER: [&str; 5] = ["what", "unit", "a", "b", "b_minus_a"];

/// The header of `doctor --format csv`.
pub const DOCTOR_HEADER: [&str; 5] = ["kind", "id", "severity", "applies", "detail"];

fn finish(w: csv::Writer<Vec<u8>>) -> Result<String, CsvError> {
    let bytes = w
        .into_inner()
        .map_err(|e| CsvError(csv::Error::from(e.into_error())))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `show`: one row per recording × process × device with its peaks in bytes (a job's recordings
/// each under their node's name).
pub fn show(runs: &[(&str, &RunSummary)]) -> Result<String, CsvError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(SHOW_HEADER)?;
    for (name, s) in runs {
        for p in &s.peaks {
            w.write_record([
                safe(name).as_str(),
                &p.pid.to_string(),
                &p.rank.map(|r| r.to_string()).unwrap_or_default(),
                &safe(&p.device),
                if p.home { "yes" } else { "no" },
                &p.device_local.to_string(),
                &p.host.to_string(),
            ])?;
        }
    }
    finish(w)
}

/// A diff value as (unit, number or text).
fn cell(v: &Value) -> (String, String) {
    match v {
        Value::Bytes(b) => ("bytes".into(), b.map(|n| n.to_string()).unwrap_or_default()),
        Value::Seconds(s) => ("s".into(), format!("{s:.3}")),
        Value::Text(t) => (String::new(), safe(t)),
        Value::Rate(r) => (
            safe(r.unit.as_deref().unwrap_or("")),
            r.median.map(|m| format!("{m}")).unwrap_or_default(),
        ),
    }
}

/// B - A as a number where both are numbers of one kind.
fn delta(a: &Value, b: &Value) -> String {
    match (a, b) {
        (Value::Bytes(Some(x)), Value::Bytes(Some(y))) => (*y as i128 - *x as i128).to_string(),
        (Value::Seconds(x), Value::Seconds(y)) => format!("{:.3}", y - x),
        (Value::Rate(x), Value::Rate(y)) => match (x.median, y.median) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => format!("{}", y - x),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// `diff`: the bad-vs-good table's rows, each value as a number with its unit.
pub fn diff(d: &Diff) -> Result<String, CsvError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(DIFF_HEADER)?;
    for r in &d.rows {
        let (unit_a, a) = cell(&r.a);
        let (unit_b, b) = cell(&r.b);
        let unit = if unit_a.is_empty() { unit_b } else { unit_a };
        w.write_record([safe(&r.what), unit, a, b, delta(&r.a, &r.b)])?;
    }
    finish(w)
}

/// `doctor`: the findings, then every known-issue entry for these devices (applies yes or no,
/// and why), then gpuledger's own limitations here.
pub fn doctor(r: &Report) -> Result<String, CsvError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(DOCTOR_HEADER)?;
    for f in &r.findings {
        w.write_record([
            "finding",
            f.kind.as_str(),
            f.severity.as_str(),
            "yes",
            &safe(&f.message),
        ])?;
    }
    for m in &r.known_issues.matches {
        let detail = safe(&m.facts.join("; "));
        w.write_record(["known_issue", &m.id, m.severity.as_str(), "yes", &detail])?;
    }
    for n in &r.known_issues.not_matched {
        w.write_record(["known_issue", &n.id, "", "no", &safe(&n.reason)])?;
    }
    for l in &r.limitations {
        w.write_record(["limitation", l.id, "", "yes", l.text])?;
    }
    finish(w)
}
