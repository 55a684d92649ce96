//! The window of the kernel log's verdicts: failures logged before it are history (info), so
//! one OOM line does not keep a health check (`--fail-on critical`) failing until reboot.

use crate::sources::kernel_log::WholeLog;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use thiserror::Error;

/// The window when none is given: the last hour.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(3600);

/// Where the window starts (`--since`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// This long before now (`--since 2h`).
    Ago(Duration),
    /// At this wall-clock time (`--since 2026-12-04T10:00:00Z`).
    At(SystemTime),
}

impl Default for Since {
    fn default() -> Since {
        Since::Ago(DEFAULT_WINDOW)
    }
}

/// A `--since` value that is neither a duration nor a timestamp.
#[derive(Debug, Error, PartialEq, Eq)]
#[error(
    "--since {0:?}: give a duration (30m, 2h, 1day) or an RFC 3339 time (2026-12-04T10:00:00Z)"
)]
pub struct SinceError(pub String);

/// Parses `--since`: a duration (`90s`, `2h`, `1day`) or an RFC 3339 timestamp.
pub fn parse_since(text: &str) -> Result<Since, SinceError> {
    let t = text.trim();
    if let Ok(d) = humantime::parse_duration(t) {
        return Ok(Since::Ago(d));
    }
    humantime::parse_rfc3339_weak(t)
        .map(Since::At)
        .map_err(|_| SinceError(text.to_string()))
}

impl Since {
    /// The window's start in µs since boot for `log`, or `None` when it cannot be placed (no
    /// boot time for a timestamp; an empty log). "Now" is `now_ms` (wall-clock ms, the live
    /// machine's clock); without it (a capture tree, whose capture time is not kept) the log's
    /// last line, the latest moment the capture is known to have seen.
    pub fn cutoff_usec(self, log: &WholeLog, now_ms: Option<u64>) -> Option<u64> {
        let boot_usec = log.boot_s.map(|b| b.saturating_mul(1_000_000));
        match self {
            Since::At(t) => {
                let at = u64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_micros()).ok()?;
                Some(at.saturating_sub(boot_usec?))
            }
            Since::Ago(d) => {
                let now = match (now_ms, boot_usec) {
                    (Some(ms), Some(b)) => ms.saturating_mul(1000).saturating_sub(b),
                    _ => log.records.iter().map(|r| r.usec).max()?,
                };
                let d = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
                Some(now.saturating_sub(d))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::kmsg::KmsgRecord;
    use proptest::prelude::*;

    fn log(usecs: &[u64], boot_s: Option<u64>) -> WholeLog {
        WholeLog {
            records: usecs
                .iter()
                .map(|u| KmsgRecord {
                    prio: 3,
                    seq: 0,
                    usec: *u,
                    message: String::new(),
                    dict: Vec::new(),
                })
                .collect(),
            boot_s,
            ..WholeLog::default()
        }
    }

    #[test]
    fn durations_and_timestamps_parse() {
        assert_eq!(parse_since("2h"), Ok(Since::Ago(Duration::from_secs(7200))));
        assert_eq!(
            parse_since("2026-01-01T00:00:00Z"),
            Ok(Since::At(UNIX_EPOCH + Duration::from_secs(1_767_225_600)))
        );
        assert!(parse_since("yesterday").is_err());
        assert!(parse_since("").is_err());
    }

    #[test]
    fn the_window_is_placed_against_the_clock_or_the_logs_last_line() {
        let l = log(&[10_000_000, 7_200_000_000], Some(1_000));
        let hour = Since::default();
        // A tree: now is the last line (2 h after boot), the window its last hour.
        assert_eq!(hour.cutoff_usec(&l, None), Some(3_600_000_000));
        // Live: now from the clock, 3 h after boot.
        let now_ms = (1_000 + 3 * 3600) * 1000;
        assert_eq!(hour.cutoff_usec(&l, Some(now_ms)), Some(7_200_000_000));
        let at = Since::At(UNIX_EPOCH + Duration::from_secs(1_000 + 60));
        assert_eq!(at.cutoff_usec(&l, None), Some(60_000_000));
        assert_eq!(at.cutoff_usec(&log(&[1], None), None), None, "no boot time");
        assert_eq!(hour.cutoff_usec(&log(&[], None), None), None);
    }

    proptest! {
        /// Every humantime duration is an `Ago` of that length; nothing panics.
        #[test]
        fn any_duration_is_ago(secs in 0u64..10_000_000, unit in prop::sample::select(vec!["s", "m", "h"])) {
            let text = format!("{secs}{unit}");
            let mult = match unit { "s" => 1, "m" => 60, _ => 3600 };
            prop_assert_eq!(parse_since(&text), Ok(Since::Ago(Duration::from_secs(secs * mult))));
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,40}") {
            let _ = parse_since(&text);
        }
    }
}
