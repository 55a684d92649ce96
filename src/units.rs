//! Byte sizes, shares and durations as users write them (`8GiB`, `512MiB`, `10%`, `500ms`) and as
//! we print them. The command line parses through these once, in its value parsers.

use std::time::Duration;
use thiserror::Error;

/// A size given on the command line: absolute bytes, or a share of a reference total.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A percentage (0–100) of a reference, such as MemTotal.
    Percent(f64),
}

impl SizeSpec {
    /// Resolves the spec against `reference` bytes (used for percentages).
    pub fn resolve(self, reference: u64) -> u64 {
        match self {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => (reference as f64 * p / 100.0) as u64,
        }
    }
}

/// A size, share or duration that could not be understood.
#[derive(Debug, Error, PartialEq)]
pub enum SizeError {
    /// Not a number with a known unit.
    #[error(
        "invalid size {0:?}: expected a number with a unit B, KiB, MiB, GiB or TiB, e.g. 512MiB"
    )]
    Invalid(String),
    /// A number without a unit: bytes to the parser, gigabytes to the person who wrote it.
    #[error("{0} is a bare number; write {0}GiB or {0}MiB")]
    Bare(String),
    /// The same where a share of a total is also accepted.
    #[error("{0} is a bare number; write {0}GiB, {0}MiB or {0}%")]
    BareOrShare(String),
    /// A decimal unit (kB, MB, GB, TB), which people and tools read in two ways.
    #[error(
        "invalid size {value:?}: gpuledger uses binary units; write {suggest} (GiB = 2^30 bytes)"
    )]
    Decimal {
        /// The text as given.
        value: String,
        /// The same number with the binary unit.
        suggest: String,
    },
    /// A percentage outside 0–100.
    #[error("invalid percentage {0:?}: give a share from 0% to 100%")]
    PercentRange(String),
    /// A percentage where only an absolute size makes sense.
    #[error(
        "invalid size {0:?}: this option takes an absolute size such as 24GiB, not a percentage"
    )]
    NotAbsolute(String),
    /// A duration that did not parse or is too short.
    #[error("invalid duration {value:?}: {why}; write it like 500ms, 1s or 2m")]
    Duration {
        /// The text as given.
        value: String,
        /// What was wrong.
        why: String,
    },
}

/// Parses `8GiB`, `512 MiB`, `4096B`, `1.5GiB`, `8G`, `10%`. Units are binary: B, KiB, MiB, GiB,
/// TiB, and the short K/M/G/T and Ki/Mi/Gi/Ti read as the same ([`short_unit_note`] says so).
/// Decimal units (kB, MB, GB, TB) are refused with the binary spelling to use; a bare number
/// other than 0 is refused with the units to add, since `10` meant as gigabytes is ten bytes.
pub fn parse_size_spec(text: &str) -> Result<SizeSpec, SizeError> {
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| SizeError::Invalid(text.to_string()))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(SizeError::PercentRange(text.to_string()));
        }
        return Ok(SizeSpec::Percent(v));
    }
    match parse_bytes(text) {
        Err(SizeError::Bare(n)) => Err(SizeError::BareOrShare(n)),
        bytes => bytes.map(SizeSpec::Bytes),
    }
}

/// Parses an absolute size (`24GiB`); a percentage is refused.
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let err = || SizeError::Invalid(text.to_string());
    let t = text.trim();
    if t.ends_with('%') {
        return Err(SizeError::NotAbsolute(text.to_string()));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if num.is_empty() {
        return Err(err());
    }
    let shift = match binary_shift(unit) {
        Some(shift) => shift,
        None if unit.is_empty() => {
            if num.parse::<f64>().is_ok_and(|v| v == 0.0) {
                return Ok(0);
            }
            return Err(SizeError::Bare(num.to_string()));
        }
        None => return Err(decimal_hint(text, num, unit).unwrap_or_else(err)),
    };
    let mult = 1u64 << shift;
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).ok_or_else(err);
    }
    let f: f64 = num.parse().map_err(|_| err())?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(err());
    }
    Ok(bytes as u64)
}

/// The power of two a binary unit stands for: `B`, `KiB`…`TiB`, and the short `K`/`Ki`…`T`/`Ti`
/// (case-insensitive); `None` for anything else, including no unit.
fn binary_shift(unit: &str) -> Option<u32> {
    let lower = unit.to_ascii_lowercase();
    let prefix = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('i'))
        .unwrap_or(&lower);
    if lower == "b" {
        return Some(0);
    }
    match prefix {
        "k" => Some(10),
        "m" => Some(20),
        "g" => Some(30),
        "t" => Some(40),
        _ => None,
    }
}

/// How a size written with a short unit (`8G`, `8Gi`, `512m`) was read, e.g. "8G read as 8 GiB",
/// for the command line to print once; `None` for a size spelled out (`8GiB`) or not a size.
pub fn short_unit_note(text: &str) -> Option<String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let lower = unit.to_ascii_lowercase();
    if num.is_empty() || lower == "b" || lower.ends_with("ib") {
        return None;
    }
    let shift = binary_shift(unit)?;
    let name = ["B", "KiB", "MiB", "GiB", "TiB"][(shift / 10) as usize];
    Some(format!("{t} read as {num} {name}"))
}

/// The binary spelling for a decimal unit (`30GB` → `30GiB`).
fn decimal_hint(text: &str, num: &str, unit: &str) -> Option<SizeError> {
    let prefix = match unit.to_ascii_lowercase().as_str() {
        "kb" => "Ki",
        "mb" => "Mi",
        "gb" => "Gi",
        "tb" => "Ti",
        _ => return None,
    };
    (!num.is_empty()).then(|| SizeError::Decimal {
        value: text.to_string(),
        suggest: format!("{num}{prefix}B"),
    })
}

/// Shortest sampling interval accepted: below it a sampler spins a core and measures itself.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// Parses a duration such as `500ms`, `1s`, `2m`.
pub fn parse_duration(text: &str) -> Result<Duration, SizeError> {
    humantime::parse_duration(text.trim()).map_err(|e| SizeError::Duration {
        value: text.to_string(),
        why: e.to_string(),
    })
}

/// Parses a sampling interval: a duration of at least [`MIN_INTERVAL`].
pub fn parse_interval(text: &str) -> Result<Duration, SizeError> {
    let d = parse_duration(text)?;
    if d < MIN_INTERVAL {
        return Err(SizeError::Duration {
            value: text.to_string(),
            why: "an interval must be 10ms or more".into(),
        });
    }
    Ok(d)
}

/// `1 sample`, `2 samples`: a count with its noun (plural by adding `s`).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Formats bytes for people: `0 B`, `512 B`, `16.0 KiB`, `8.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    human_bytes_with(bytes, 1)
}

/// Two byte counts that a reader compares ("… above the ceiling …"), each with as many decimals
/// (one to three) as it takes to tell different counts apart, else in bytes.
pub fn human_bytes_apart(a: u64, b: u64) -> (String, String) {
    if a == b {
        return (human_bytes(a), human_bytes(b));
    }
    (1..=3)
        .map(|d| (human_bytes_with(a, d), human_bytes_with(b, d)))
        .find(|(x, y)| x != y)
        .unwrap_or_else(|| (format!("{a} B"), format!("{b} B")))
}

fn human_bytes_with(bytes: u64, decimals: usize) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.decimals$} {}", UNITS[unit])
}

/// Formats an optional byte count; absent numbers print as `-`.
pub fn human_opt(bytes: Option<u64>) -> String {
    bytes.map(human_bytes).unwrap_or_else(|| "-".to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_compared_are_printed_apart() {
        let (held, max) = super::human_bytes_apart(1_082_130_432, 1 << 30);
        assert_eq!((held.as_str(), max.as_str()), ("1.01 GiB", "1.00 GiB"));
        let (a, b) = super::human_bytes_apart((6 << 30) + 1, 6 << 30);
        assert_eq!((a.as_str(), b.as_str()), ("6442450945 B", "6442450944 B"));
        let (a, b) = super::human_bytes_apart(7 << 30, 6 << 30);
        assert_eq!((a.as_str(), b.as_str()), ("7.0 GiB", "6.0 GiB"));
    }

    use super::*;

    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(count(1, "sample"), "1 sample");
        assert_eq!(count(0, "sample"), "0 samples");
        assert_eq!(count(12, "sample"), "12 samples");
    }
    use proptest::prelude::*;

    #[test]
    fn parses_units_and_percent() {
        assert_eq!(parse_size_spec("8GiB"), Ok(SizeSpec::Bytes(8 << 30)));
        assert_eq!(parse_size_spec("512 MiB"), Ok(SizeSpec::Bytes(512 << 20)));
        assert_eq!(parse_size_spec("4096B"), Ok(SizeSpec::Bytes(4096)));
        assert_eq!(parse_size_spec("0"), Ok(SizeSpec::Bytes(0)));
        assert_eq!(parse_size_spec("1.5GiB"), Ok(SizeSpec::Bytes(3 << 29)));
        assert_eq!(parse_size_spec("10%"), Ok(SizeSpec::Percent(10.0)));
        assert!(parse_size_spec("10 parsecs").is_err());
        assert_eq!(
            parse_size_spec("150%"),
            Err(SizeError::PercentRange("150%".into()))
        );
        assert!(parse_size_spec("GiB").is_err());
        assert!(parse_size_spec("99999999999999999999TiB").is_err());
    }

    #[test]
    fn refuses_decimal_units_with_the_binary_spelling() {
        let e = parse_bytes("30GB").unwrap_err();
        assert!(e.to_string().contains("binary units; write 30GiB"), "{e}");
        assert!(matches!(parse_bytes("2MB"), Err(SizeError::Decimal { .. })));
        assert_eq!(
            parse_bytes("10%"),
            Err(SizeError::NotAbsolute("10%".into()))
        );
    }

    #[test]
    fn a_bare_number_names_the_units_to_add() {
        let e = parse_bytes("10").unwrap_err();
        assert_eq!(e, SizeError::Bare("10".into()));
        assert_eq!(e.to_string(), "10 is a bare number; write 10GiB or 10MiB");
        let share = parse_size_spec(" 5 ").unwrap_err();
        assert_eq!(
            share.to_string(),
            "5 is a bare number; write 5GiB, 5MiB or 5%"
        );
        assert_eq!(parse_bytes("0.0"), Ok(0));
    }

    #[test]
    fn short_units_are_binary_and_say_so() {
        for text in ["8G", "8Gi", "8g", "8gi"] {
            assert_eq!(parse_bytes(text), Ok(8 << 30), "{text}");
        }
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5T"), Ok(3 << 39));
        assert_eq!(parse_bytes("4Ki"), Ok(4096));
        assert_eq!(short_unit_note("8G").as_deref(), Some("8G read as 8 GiB"));
        assert_eq!(short_unit_note("8Gi").as_deref(), Some("8Gi read as 8 GiB"));
        assert_eq!(short_unit_note("8GiB"), None);
        assert_eq!(short_unit_note("8B"), None);
        assert_eq!(short_unit_note("8GB"), None);
        assert_eq!(short_unit_note("10%"), None);
    }

    #[test]
    fn intervals_have_a_floor() {
        assert_eq!(parse_interval("10ms"), Ok(MIN_INTERVAL));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("9ms").is_err());
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn resolves_percent_of_reference() {
        assert_eq!(SizeSpec::Percent(10.0).resolve(1000), 100);
        assert_eq!(SizeSpec::Bytes(7).resolve(1000), 7);
    }

    #[test]
    fn formats_human() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(8913000 * 1024), "8.5 GiB");
        assert_eq!(human_opt(None), "-");
    }

    proptest! {
        #[test]
        fn bytes_round_trip(n in 0u64..(1 << 50), unit in 0usize..4) {
            let names = ["B", "KiB", "MiB", "GiB"];
            let text = format!("{n}{}", names[unit]);
            let expect = n.checked_mul(1u64 << (10 * unit as u32));
            match expect {
                Some(b) => prop_assert_eq!(parse_size_spec(&text), Ok(SizeSpec::Bytes(b))),
                None => prop_assert!(parse_size_spec(&text).is_err()),
            }
        }

        #[test]
        fn short_and_long_units_agree(n in 1u64..(1 << 20), unit in 0usize..4) {
            let short = ["K", "M", "G", "T"][unit];
            let long = || parse_bytes(&format!("{n}{short}iB"));
            prop_assert_eq!(parse_bytes(&format!("{n}{short}")), long());
            prop_assert_eq!(parse_bytes(&format!("{n}{short}i")), long());
        }

        #[test]
        fn a_bare_number_is_never_bytes(n in 1u64..u64::MAX) {
            prop_assert_eq!(parse_bytes(&n.to_string()), Err(SizeError::Bare(n.to_string())));
        }

        #[test]
        fn never_panics(s in ".{0,24}") {
            let _ = parse_size_spec(&s);
            let _ = human_bytes(s.len() as u64 * 1_000_000_007);
        }
    }
}
