//! Finding thresholds: the docs/DESIGN.md defaults, each settable with `--threshold NAME=VALUE`.

use crate::units::{parse_bytes, parse_size_spec, SizeSpec};
use thiserror::Error;

/// Thresholds for every finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// peer_mirror: least host-class bytes on the peer.
    pub peer_min_bytes: u64,
    /// peer_mirror: least share of the device-local bytes it could mirror.
    pub peer_min_ratio: f64,
    /// peer_mirror: most multiple of the device-local bytes it could mirror (a mirror cannot be
    /// larger than what it mirrors, beyond this margin).
    pub peer_max_ratio: f64,
    /// peer_mirror: device-local bytes on a device up to which they are a context (every runtime
    /// creates one of 0.1–0.5 GiB on each device it sees), not an allocation that is mirrored.
    pub peer_context_floor: u64,
    /// own_card_mirror (on the owning device's own fd): least host-class bytes (a runtime's ordinary
    /// staging and command buffers are hundreds of MiB and can match a small early working set).
    pub peer_own_min_bytes: u64,
    /// Host evidence share of mirrored bytes at or above which backing is `pinned`.
    pub backing_pinned: f64,
    /// Share below which backing is `not_pinned`.
    pub backing_not_pinned: f64,
    /// driver_held_host: least bytes.
    pub driver_held_min_bytes: u64,
    /// driver_held_host: least share of MemTotal.
    pub driver_held_min_share: f64,
    /// host_pressure: MemAvailable share of MemTotal below which it fires.
    pub pressure_available_share: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            peer_min_bytes: 256 << 20,
            peer_min_ratio: 0.25,
            peer_max_ratio: 1.25,
            peer_context_floor: 512 << 20,
            peer_own_min_bytes: 1 << 30,
            backing_pinned: 0.5,
            backing_not_pinned: 0.1,
            driver_held_min_bytes: 1 << 30,
            driver_held_min_share: 0.05,
            pressure_available_share: 0.10,
        }
    }
}

/// A `--threshold` that could not be applied.
#[derive(Debug, Error, PartialEq)]
pub enum ThresholdError {
    /// Not `NAME=VALUE`, or an unknown name.
    #[error("unknown threshold {0:?}; known: {names}", names = Thresholds::NAMES.join(", "))]
    Unknown(String),
    /// The value did not parse.
    #[error(
        "threshold {name}: invalid value {value:?} (sizes like 256MiB, shares like 0.25 or 25%)"
    )]
    Value {
        /// The threshold.
        name: String,
        /// The text given.
        value: String,
    },
    /// A size that did not parse (a bare number, a decimal unit); the cause names the fix.
    #[error("threshold {name}")]
    Size {
        /// The threshold.
        name: String,
        /// Why the size was refused.
        #[source]
        source: crate::units::SizeError,
    },
}

impl Thresholds {
    /// Names accepted by [`Thresholds::set`].
    pub const NAMES: [&'static str; 10] = [
        "peer.min_bytes",
        "peer.min_ratio",
        "peer.max_ratio",
        "peer.context_floor",
        "peer.own_min_bytes",
        "backing.pinned",
        "backing.not_pinned",
        "driver_held.min_bytes",
        "driver_held.min_share",
        "pressure.available_share",
    ];

    /// Applies `NAME=VALUE`.
    pub fn set(&mut self, assignment: &str) -> Result<(), ThresholdError> {
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| ThresholdError::Unknown(assignment.to_string()))?;
        let bad = || ThresholdError::Value {
            name: name.to_string(),
            value: value.to_string(),
        };
        let bytes = || {
            parse_bytes(value).map_err(|source| ThresholdError::Size {
                name: name.to_string(),
                source,
            })
        };
        let share = || -> Result<f64, ThresholdError> {
            let v = match parse_size_spec(value) {
                Ok(SizeSpec::Percent(p)) => p / 100.0,
                _ => value.trim().parse::<f64>().map_err(|_| bad())?,
            };
            (0.0..=1.0).contains(&v).then_some(v).ok_or_else(bad)
        };
        match name.trim() {
            "peer.min_bytes" => self.peer_min_bytes = bytes()?,
            "peer.min_ratio" => self.peer_min_ratio = share()?,
            "peer.max_ratio" => {
                self.peer_max_ratio = value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| (1.0..=10.0).contains(v))
                    .ok_or_else(bad)?
            }
            "peer.context_floor" => self.peer_context_floor = bytes()?,
            "peer.own_min_bytes" => self.peer_own_min_bytes = bytes()?,
            "backing.pinned" => self.backing_pinned = share()?,
            "backing.not_pinned" => self.backing_not_pinned = share()?,
            "driver_held.min_bytes" => self.driver_held_min_bytes = bytes()?,
            "driver_held.min_share" => self.driver_held_min_share = share()?,
            "pressure.available_share" => self.pressure_available_share = share()?,
            _ => return Err(ThresholdError::Unknown(name.to_string())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_by_name() {
        let mut t = Thresholds::default();
        t.set("peer.min_bytes=1GiB").unwrap();
        t.set("peer.min_ratio=50%").unwrap();
        t.set("backing.pinned=0.6").unwrap();
        assert_eq!(
            (t.peer_min_bytes, t.peer_min_ratio, t.backing_pinned),
            (1 << 30, 0.5, 0.6)
        );
        assert!(matches!(t.set("nope=1"), Err(ThresholdError::Unknown(_))));
        assert!(matches!(
            t.set("peer.min_ratio=2"),
            Err(ThresholdError::Value { .. })
        ));
        assert!(t.set("peer.min_bytes").is_err());
    }
}
