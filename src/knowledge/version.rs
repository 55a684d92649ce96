//! Dotted release versions (`26.09.37435`, `26.31.39395.13`, `580.159`) and affected ranges.
//!
//! Package managers decorate versions: a Debian epoch (`1:`), a revision (`-0`, `-1~26.04~ppa1`),
//! a local label (`+xpu`). Only the leading dotted numbers are compared; a missing component
//! counts as 0, so `26.09.37435.7` lies above `26.09.37435` and `26.09` below it.

use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;

/// A parsed dotted version; compares numerically, component by component.
#[derive(Debug, Clone, Eq, Serialize)]
#[serde(into = "String")]
pub struct Version {
    parts: Vec<u64>,
    /// The dotted part as written (`26.09.37435`), for display.
    text: String,
}

impl Version {
    /// Parses the leading dotted numbers of `text` after any `epoch:`; `None` when there are none.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim();
        let text = text.split_once(':').map_or(text, |(_, rest)| rest);
        let mut parts = Vec::new();
        let mut shown = Vec::new();
        for piece in text.split('.') {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            parts.push(digits.parse::<u64>().ok()?);
            let whole = digits.len() == piece.len();
            shown.push(digits);
            // A decoration (`7-0`, `13+xpu`) ends the version.
            if !whole {
                break;
            }
        }
        Some(Version {
            parts,
            text: shown.join("."),
        })
    }

    fn part(&self, i: usize) -> u64 {
        self.parts.get(i).copied().unwrap_or(0)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.parts.len().max(other.parts.len());
        (0..n)
            .map(|i| self.part(i).cmp(&other.part(i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<Version> for String {
    fn from(v: Version) -> String {
        v.to_string()
    }
}

/// The versions an entry affects: from `low` (inclusive) to `fixed` (exclusive, none = open).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Range {
    /// The introducing release, else the earliest release a report saw it on.
    pub low: Version,
    /// Whether `low` is the introducing release (true) or only the earliest report (false).
    pub low_is_introduced: bool,
    /// The first fixed release, when one is known.
    pub fixed: Option<Version>,
}

impl Range {
    /// Whether `v` lies in the range.
    pub fn contains(&self, v: &Version) -> bool {
        *v >= self.low && self.fixed.as_ref().is_none_or(|f| v < f)
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = if self.low_is_introduced {
            "introduced in"
        } else {
            "first reported on"
        };
        match &self.fixed {
            Some(x) => write!(f, "{from} {}, fixed in {x}", self.low),
            None => write!(f, "{from} {}, no fixed release", self.low),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn package_decorations_are_ignored() {
        assert_eq!(v("26.27.39122.12-1~26.04~ppa1"), v("26.27.39122.12"));
        assert_eq!(v("1:26.09.37435.7-0").to_string(), "26.09.37435.7");
        assert_eq!(v("2.14.0+xpu").to_string(), "2.14.0");
        assert_eq!(v("26.09.37435").to_string(), "26.09.37435");
        assert_eq!(Version::parse("abc"), None);
        assert_eq!(Version::parse(""), None);
    }

    #[test]
    fn numeric_not_textual_order() {
        assert!(v("26.09.37435") < v("26.10"));
        assert!(v("26.9") == v("26.09"));
        assert!(v("26.09.37435.7") > v("26.09.37435"));
        assert!(v("26.09") < v("26.09.37435"));
        assert!(v("26.31.39395.13") > v("26.31.39395.9"));
        assert!(v("580.159") > v("580.95.05"));
    }

    #[test]
    fn range_bounds() {
        let r = Range {
            low: v("26.09.37435"),
            low_is_introduced: true,
            fixed: Some(v("26.40")),
        };
        assert!(!r.contains(&v("26.09.37434.99")));
        assert!(r.contains(&v("26.09.37435")));
        assert!(r.contains(&v("26.39.99999.9")));
        assert!(!r.contains(&v("26.40")));
        assert_eq!(r.to_string(), "introduced in 26.09.37435, fixed in 26.40");
    }
}
