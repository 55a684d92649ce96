//! Time as the library's loops see it.
//!
//! Loops with state (guard's escalation, the sampler's cadences) ask a [`Clock`] instead of
//! calling `Instant::now()`, so tests drive them with a [`ManualClock`] and never sleep. The
//! binary hands them [`SystemClock`].

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of monotonic instants and of wall-clock time.
pub trait Clock: Debug + Send + Sync {
    /// The current monotonic instant (for periods and deadlines).
    fn now(&self) -> Instant;
    /// Milliseconds since the Unix epoch (for timestamps that people and files read).
    fn wall_ms(&self) -> u64;
}

/// The machine's clocks. Its wall-clock time is the wall clock read once, at the process's
/// first use, moved on by the monotonic clock: a step of the wall clock while a job runs (NTP,
/// `date -s`, a suspended VM) never stretches or reverses a recording's times or durations.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

/// The wall clock and the monotonic clock read together, once per process.
fn anchor() -> (Instant, u64) {
    static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();
    *ANCHOR.get_or_init(|| (Instant::now(), real_wall_ms()))
}

/// The wall clock as it reads now (it may step).
fn real_wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall_ms(&self) -> u64 {
        let (at, wall) = anchor();
        let since = u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX);
        wall.saturating_add(since)
    }
}

/// Milliseconds since the Unix epoch by the [`SystemClock`] (monotonic within this process).
pub fn wall_ms() -> u64 {
    SystemClock.wall_ms()
}

/// The shared system clock, as the library's loops take it.
pub fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A clock that moves only when told to ([`ManualClock::advance`]); both its instants and its
/// wall-clock time start where it was created and move together.
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    wall_start_ms: u64,
    /// Nanoseconds advanced since `start`.
    elapsed_ns: AtomicU64,
}

impl ManualClock {
    /// A clock standing at the moment it is made (wall time: 2026-01-01T00:00:00Z).
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock {
            start: Instant::now(),
            wall_start_ms: 1_767_225_600_000,
            elapsed_ns: AtomicU64::new(0),
        })
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.elapsed_ns.fetch_add(ns, Ordering::SeqCst);
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns.load(Ordering::SeqCst))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + self.elapsed()
    }

    fn wall_ms(&self) -> u64 {
        let ms = u64::try_from(self.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.wall_start_ms.saturating_add(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let c = ManualClock::new();
        let (t0, w0) = (c.now(), c.wall_ms());
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.now() - t0, Duration::from_millis(1500));
        assert_eq!(c.wall_ms() - w0, 1500);
    }

    #[test]
    fn system_wall_time_never_runs_back_and_follows_the_monotonic_clock() {
        let (a, t0) = (wall_ms(), Instant::now());
        std::thread::sleep(Duration::from_millis(30));
        let (b, dt) = (wall_ms(), t0.elapsed());
        assert!(b >= a + 29, "{a} then {b}");
        let dt = u64::try_from(dt.as_millis()).unwrap();
        assert!(b - a <= dt + 1, "{} ms of wall time in {dt} ms", b - a);
        assert!(
            real_wall_ms().abs_diff(b) < 60_000,
            "anchored near the real wall clock"
        );
    }
}
