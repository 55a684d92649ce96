//! `--rate NAME=REGEX[:UNIT]`: a number taken from progress lines, as a named series.

use regex::Regex;
use thiserror::Error;

/// Largest magnitude a rate value may have. A job's throughput (seconds per step, tokens or bytes
/// per second) is far below it; a larger number is a misparse or a hostile line, and a chart whose
/// axis reaches `f64::MAX` cannot be drawn.
pub const MAX_RATE_MAGNITUDE: f64 = 1e15;

/// Whether `v` may be a rate value: finite and at most [`MAX_RATE_MAGNITUDE`] in magnitude.
pub fn plausible(v: f64) -> bool {
    v.is_finite() && v.abs() <= MAX_RATE_MAGNITUDE
}

/// A throughput series to take from the job's output.
#[derive(Debug, Clone)]
pub struct RateSpec {
    /// Its name (`wave`).
    pub name: String,
    /// The regex; its one capture group is the number.
    pub regex: Regex,
    /// Its unit (`s/wave`), when given.
    pub unit: Option<String>,
}

/// A `--rate` value that cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RateSpecError {
    /// No `=`, or nothing before it.
    #[error("{0:?} is not NAME=REGEX[:UNIT], e.g. 'wave=wave time ([0-9.]+) s:s/wave'")]
    Shape(String),
    /// The name has characters other than letters, digits, `_`, `-` and `.`.
    #[error("rate name {0:?} may hold only letters, digits, '_', '-' and '.'")]
    Name(String),
    /// The regex does not compile.
    #[error("rate regex {regex:?} does not compile: {why}")]
    Regex {
        /// The regex.
        regex: String,
        /// The compiler's message.
        why: String,
    },
    /// Not exactly one capture group.
    #[error("rate regex {regex:?} has {groups} capture groups; it needs exactly one, around the number (use (?:...) for others)")]
    Groups {
        /// The regex.
        regex: String,
        /// How many it has.
        groups: usize,
    },
}

impl RateSpec {
    /// Parses `NAME=REGEX[:UNIT]`. The unit is the text after the last `:` when that text holds
    /// no `)` (a `:` inside the regex, as in `(?:x)` or `elapsed: ([0-9]+)`, is followed by one);
    /// end the value with `:` to say there is no unit.
    pub fn parse(s: &str) -> Result<RateSpec, RateSpecError> {
        let (name, rest) = s
            .split_once('=')
            .filter(|(n, r)| !n.is_empty() && !r.is_empty())
            .ok_or_else(|| RateSpecError::Shape(s.to_string()))?;
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(RateSpecError::Name(name.to_string()));
        }
        let (pattern, unit) = match rest.rsplit_once(':') {
            Some((p, u)) if !u.contains(')') => (p, Some(u.trim()).filter(|u| !u.is_empty())),
            _ => (rest, None),
        };
        let regex = Regex::new(pattern).map_err(|e| RateSpecError::Regex {
            regex: pattern.to_string(),
            why: e.to_string(),
        })?;
        let groups = regex.captures_len() - 1;
        if groups != 1 {
            return Err(RateSpecError::Groups {
                regex: pattern.to_string(),
                groups,
            });
        }
        Ok(RateSpec {
            name: name.to_string(),
            regex,
            unit: unit.map(str::to_string),
        })
    }

    /// The number a line gives, when it matches and its group is a [`plausible`] number.
    pub fn value(&self, line: &str) -> Option<f64> {
        let text = self.regex.captures(line)?.get(1)?.as_str();
        text.trim().parse::<f64>().ok().filter(|v| plausible(*v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn wave() -> RateSpec {
        RateSpec::parse("wave=wave ([-+0-9.eE]+|inf|NaN)").unwrap()
    }

    #[test]
    fn non_finite_and_absurd_values_are_not_values() {
        let r = wave();
        for line in [
            "wave 1.7e308",
            "wave -1e308",
            "wave inf",
            "wave NaN",
            "wave 1e16",
            &format!("wave {}", "9".repeat(309)),
        ] {
            assert_eq!(r.value(line), None, "{line}");
        }
        assert_eq!(r.value("wave 3.5"), Some(3.5));
        assert_eq!(r.value("wave -2e3"), Some(-2000.0));
        assert_eq!(r.value("wave 1e15"), Some(1e15));
    }

    proptest! {
        #[test]
        fn every_value_is_plausible(text in "[-+0-9.eE]{1,40}") {
            if let Some(v) = wave().value(&format!("wave {text}")) {
                prop_assert!(v.is_finite() && v.abs() <= MAX_RATE_MAGNITUDE, "{v}");
            }
        }
    }
}
