//! One row of the bad-vs-good table: what is compared and each run's value, and how a value
//! reads in a cell and in the "B - A" column.

use super::evidence::{approx, compare_medians, RateChange, THROUGHPUT_TOLERANCE};
use crate::units::human_bytes;
use serde::Serialize;

/// One value of a diff row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// Bytes (null when unknown).
    Bytes(Option<u64>),
    /// Seconds.
    Seconds(f64),
    /// Free text.
    Text(String),
    /// A throughput series' median.
    Rate(RateValue),
}

/// A throughput series' median, as one run recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateValue {
    /// Median (null when the run has no such series).
    pub median: Option<f64>,
    /// Unit.
    pub unit: Option<String>,
}

impl Value {
    /// The value as a table cell shows it (`~3.0 s/wave`); text is raw, escape it to display.
    pub fn show(&self) -> String {
        match self {
            Value::Bytes(b) => b.map(human_bytes).unwrap_or_else(|| "not recorded".into()),
            Value::Seconds(s) => format!("{s:.1} s"),
            Value::Text(t) => t.clone(),
            Value::Rate(r) => r
                .median
                .map(|m| approx(m, r.unit.as_deref()))
                .unwrap_or_else(|| "not recorded".into()),
        }
    }
}

/// The "B - A" column of a row.
pub fn change(a: &Value, b: &Value) -> String {
    match (a, b) {
        (Value::Bytes(Some(x)), Value::Bytes(Some(y))) => {
            let delta = *y as i128 - *x as i128;
            let sign = if delta < 0 { "-" } else { "+" };
            format!("{sign}{}", human_bytes(delta.unsigned_abs() as u64))
        }
        // Under the shown precision a difference reads "same", never "-0.0 s".
        (Value::Seconds(x), Value::Seconds(y)) if (y - x).abs() < 0.05 => "same".into(),
        (Value::Seconds(x), Value::Seconds(y)) => format!("{:+.1} s", y - x),
        (Value::Rate(x), Value::Rate(y)) => match compare_medians(x.median, y.median) {
            RateChange::Same => format!("same (within {:.0} %)", THROUGHPUT_TOLERANCE * 100.0),
            RateChange::Differs { relative } => format!("differs ({:+.0} %)", relative * 100.0),
            RateChange::Unknown => "not comparable".into(),
        },
        (x, y) if x == y => "same".into(),
        _ => "differs".into(),
    }
}

/// One row: what, A, B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// What is compared.
    pub what: String,
    /// Run A.
    pub a: Value,
    /// Run B.
    pub b: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_apart_by_less_than_shown_are_the_same() {
        let s = Value::Seconds;
        assert_eq!(change(&s(1.02), &s(1.0)), "same");
        assert_eq!(change(&s(1.0), &s(2.5)), "+1.5 s");
        assert_eq!(change(&s(2.5), &s(1.0)), "-1.5 s");
    }
}
