//! Byte sizes and thresholds as users write them (`8GiB`, `512MiB`, `10%`) and as we print them.

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

/// A size string that could not be understood.
#[derive(Debug, Error, PartialEq)]
#[error("invalid size {value:?}: expected a number with an optional unit (B, KiB, MiB, GiB, TiB) or a percentage such as 10%")]
pub struct SizeError {
    /// The text as given.
    pub value: String,
}

/// Parses `8GiB`, `512 MiB`, `4096`, `1.5GiB`, `10%`. K/M/G/T and KB/MB/GB are read as binary units.
pub fn parse_size_spec(text: &str) -> Result<SizeSpec, SizeError> {
    let err = || SizeError {
        value: text.to_string(),
    };
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| err())?;
        if !(0.0..=100.0).contains(&v) {
            return Err(err());
        }
        return Ok(SizeSpec::Percent(v));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(err()),
    };
    if num.is_empty() {
        return Err(err());
    }
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).map(SizeSpec::Bytes).ok_or_else(err);
    }
    let f: f64 = num.parse().map_err(|_| err())?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(err());
    }
    Ok(SizeSpec::Bytes(bytes as u64))
}

/// Formats bytes for people: `0 B`, `512 B`, `16.0 KiB`, `8.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
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
    format!("{v:.1} {}", UNITS[unit])
}

/// Formats an optional byte count; absent numbers print as `-`.
pub fn human_opt(bytes: Option<u64>) -> String {
    bytes.map(human_bytes).unwrap_or_else(|| "-".to_string())
}

/// Parses a duration such as `500ms`, `1s`, `2m`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("invalid duration {text:?}: {e}; write it like 500ms, 1s or 2m"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_units_and_percent() {
        assert_eq!(parse_size_spec("8GiB"), Ok(SizeSpec::Bytes(8 << 30)));
        assert_eq!(parse_size_spec("512 MiB"), Ok(SizeSpec::Bytes(512 << 20)));
        assert_eq!(parse_size_spec("4096"), Ok(SizeSpec::Bytes(4096)));
        assert_eq!(parse_size_spec("1.5G"), Ok(SizeSpec::Bytes(3 << 29)));
        assert_eq!(parse_size_spec("10%"), Ok(SizeSpec::Percent(10.0)));
        assert!(parse_size_spec("10 parsecs").is_err());
        assert!(parse_size_spec("150%").is_err());
        assert!(parse_size_spec("GiB").is_err());
        assert!(parse_size_spec("99999999999999999999TiB").is_err());
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
        fn never_panics(s in ".{0,24}") {
            let _ = parse_size_spec(&s);
            let _ = human_bytes(s.len() as u64 * 1_000_000_007);
        }
    }
}
