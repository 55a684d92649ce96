//! Enum values as a recording spells them (their serde names, the same as in `snapshot --json`),
//! written and parsed in this one place so the two never drift apart.

use crate::findings::{Backing, Kind, Severity};
use crate::ledger::HeldCounter;
use gpuledger_trace_wire::{Api, Op, Platform};
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use thiserror::Error;

/// A value in a recording that this build has no enum variant for.
#[derive(Debug, Error)]
#[error("unknown {column} {value:?} in the recording (written by a newer gpuledger? upgrade to read it)")]
pub struct UnknownValue {
    /// The column.
    pub column: &'static str,
    /// The value found.
    pub value: String,
}

/// The serde name of a unit enum value (`not_pinned`, `critical`, `peer_mirror`): how recordings
/// and `snapshot --json` spell it.
pub fn name_of<T: Serialize>(v: T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Parses a serde name back, or says which value of which column is unknown.
pub(super) fn parse<T: DeserializeOwned>(
    column: &'static str,
    value: &str,
) -> Result<T, UnknownValue> {
    serde_json::from_value(serde_json::Value::String(value.to_owned())).map_err(|_| UnknownValue {
        column,
        value: value.to_owned(),
    })
}

/// A finding kind; one this build does not know (a newer gpuledger wrote it) is
/// [`Kind::Unknown`], so the finding is still shown.
pub(super) fn kind(value: &str) -> Kind {
    Kind::parse(value).unwrap_or(Kind::Unknown)
}

/// A severity.
pub(super) fn severity(value: &str) -> Result<Severity, UnknownValue> {
    parse("severity", value)
}

/// A peer_mirror backing.
pub(super) fn backing(value: &str) -> Result<Backing, UnknownValue> {
    parse("backing", value)
}

/// A driver-held counter name.
pub(super) fn counter(value: &str) -> Result<HeldCounter, UnknownValue> {
    HeldCounter::parse(value).ok_or_else(|| unknown("driver-held counter", value))
}

/// A traced call's platform (`cuda`, `level_zero`).
pub(super) fn platform(value: &str) -> Result<Platform, UnknownValue> {
    Platform::from_name(value).ok_or_else(|| unknown("api_calls.platform", value))
}

/// A traced call's API kind (`device`, `host_pinned`, …).
pub(super) fn api(value: &str) -> Result<Api, UnknownValue> {
    Api::from_name(value).ok_or_else(|| unknown("api_calls.api", value))
}

/// What a traced call did (`alloc`, `free`, …).
pub(super) fn op(value: &str) -> Result<Op, UnknownValue> {
    Op::from_name(value).ok_or_else(|| unknown("api_calls.op", value))
}

fn unknown(column: &'static str, value: &str) -> UnknownValue {
    UnknownValue {
        column,
        value: value.to_owned(),
    }
}

/// Serializes a platform by its recording name (`serialize_with`: JSON spells it as the
/// recording does).
pub fn serialize_platform<S: Serializer>(p: &Platform, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.name())
}

/// Serializes an API kind by its recording name (`serialize_with`: JSON spells it as the
/// recording does).
pub fn serialize_api<S: Serializer>(a: &Api, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(a.name())
}

/// rusqlite's error for a value that does not convert, carrying the [`UnknownValue`].
pub(super) fn conversion(idx: usize, e: UnknownValue) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_an_error() {
        for b in [Backing::Pinned, Backing::NotPinned, Backing::Unknown] {
            assert_eq!(backing(&name_of(b)).unwrap(), b);
        }
        assert_eq!(name_of(Backing::NotPinned), "not_pinned");
        for k in Kind::ALL {
            assert_eq!(kind(k.as_str()), k);
            assert_eq!(name_of(k), k.as_str());
        }
        assert_eq!(severity("warning").unwrap(), Severity::Warning);
        let e = backing("half_pinned").unwrap_err();
        assert!(e.to_string().contains("backing \"half_pinned\""), "{e}");
        assert_eq!(kind("peer-mirror"), Kind::Unknown);
        assert_eq!(kind("unknown"), Kind::Unknown);
        assert!(severity("Critical").is_err());
        assert!(counter("GPUReclaim").is_err());
        assert_eq!(platform("level_zero").unwrap(), Platform::LevelZero);
        assert_eq!(api("host_pinned").unwrap(), Api::HostPinned);
        assert_eq!(op("free").unwrap(), Op::Free);
        let e = api("hostPinned").unwrap_err();
        assert!(
            e.to_string().contains("api_calls.api \"hostPinned\""),
            "{e}"
        );
        assert!(platform("opencl").is_err());
    }

    #[derive(Serialize)]
    struct Call {
        #[serde(serialize_with = "serialize_platform")]
        platform: Platform,
        #[serde(serialize_with = "serialize_api")]
        api: Api,
    }

    #[test]
    fn calls_serialize_by_their_recording_names() {
        let c = Call {
            platform: Platform::LevelZero,
            api: Api::PeerResidency,
        };
        assert_eq!(
            serde_json::to_value(c).unwrap(),
            serde_json::json!({"platform": "level_zero", "api": "peer_residency"})
        );
    }
}
