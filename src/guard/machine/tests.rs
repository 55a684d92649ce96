//! The escalation, stepped by a manual clock: no process is started and nothing sleeps.

use super::*;
use crate::clock::{Clock, ManualClock};
use std::sync::Arc;

const GRACE: Duration = Duration::from_secs(10);
const INTERVAL: Duration = Duration::from_millis(500);

fn low() -> Trip {
    Trip::LowAvailable {
        available: 9 << 30,
        floor: 10 << 30,
    }
}

fn trip(response: Response) -> Action {
    Action::Trip {
        trip: low(),
        response,
    }
}

/// A machine and the clock it is stepped by.
struct Run {
    m: Machine,
    clock: Arc<ManualClock>,
}

impl Run {
    fn new(response: Response) -> Run {
        Run {
            m: Machine::new(response, GRACE, INTERVAL),
            clock: ManualClock::new(),
        }
    }

    /// Advances the clock by `ms`, then steps with `job` and, when `crossing`, a crossing.
    fn step(&mut self, ms: u64, job: JobState, crossing: bool) -> Vec<Action> {
        self.clock.advance(Duration::from_millis(ms));
        self.m.step(self.clock.now(), job, crossing.then(low))
    }
}

use JobState::{Gone, Running};

fn ended(code: u8, left: usize) -> JobState {
    JobState::Ended {
        code,
        left: Some(left),
    }
}

#[test]
fn term_at_the_crossing_then_kill_exactly_at_grace() {
    let mut r = Run::new(Response::Term);
    assert_eq!(r.step(0, Running, false), vec![]);
    assert_eq!(r.m.pause(), INTERVAL);
    assert_eq!(r.step(500, Running, true), vec![trip(Response::Term)]);
    assert_eq!(
        r.m.pause(),
        SIGNALLED_POLL,
        "a signalled job is watched closely"
    );
    for _ in 0..199 {
        assert_eq!(
            r.step(50, Running, true),
            vec![],
            "acted twice before grace"
        );
    }
    assert_eq!(r.step(49, Running, false), vec![], "killed before grace");
    assert_eq!(
        r.step(1, Running, true),
        vec![Action::KillAfterGrace { trip: Some(low()) }]
    );
    assert_eq!(r.step(50, Running, true), vec![], "killed twice");
    assert_eq!(
        r.step(50, ended(137, 0), false),
        vec![Action::Exit(EXIT_STOPPED)]
    );
}

#[test]
fn kill_after_grace_carries_no_crossing_when_it_has_cleared() {
    let mut r = Run::new(Response::Term);
    r.step(0, Running, true);
    assert_eq!(
        r.step(10_000, Running, false),
        vec![Action::KillAfterGrace { trip: None }]
    );
}

#[test]
fn no_kill_when_the_job_ends_within_grace() {
    let mut r = Run::new(Response::Term);
    r.step(0, Running, true);
    assert_eq!(
        r.step(3_000, ended(143, 0), false),
        vec![Action::Exit(EXIT_STOPPED)]
    );
    assert_eq!(r.step(20_000, ended(143, 0), false), vec![Action::Exit(4)]);
}

#[test]
fn no_kill_when_the_guarded_pids_are_gone_within_grace() {
    let mut r = Run::new(Response::Term);
    r.step(0, Running, true);
    assert_eq!(r.step(50, Gone, false), vec![Action::Exit(EXIT_STOPPED)]);
}

#[test]
fn action_kill_kills_once_and_never_escalates() {
    let mut r = Run::new(Response::Kill);
    assert_eq!(r.step(0, Running, true), vec![trip(Response::Kill)]);
    assert_eq!(r.step(60_000, Running, true), vec![]);
    assert_eq!(r.step(50, Gone, false), vec![Action::Exit(EXIT_STOPPED)]);
}

#[test]
fn warn_only_warns_once_per_crossing_and_keeps_the_jobs_status() {
    let mut r = Run::new(Response::Warn);
    assert_eq!(r.step(0, Running, true), vec![trip(Response::Warn)]);
    for _ in 0..100 {
        assert_eq!(
            r.step(500, Running, true),
            vec![],
            "warned again while it held"
        );
    }
    assert_eq!(r.m.pause(), INTERVAL, "warning only keeps the interval");
    assert_eq!(r.step(500, Running, false), vec![]);
    assert_eq!(
        r.step(500, Running, true),
        vec![trip(Response::Warn)],
        "a new crossing after it cleared is warned"
    );
    assert_eq!(r.step(500, ended(3, 0), false), vec![Action::Exit(3)]);
}

#[test]
fn a_quiet_job_exits_with_its_own_status() {
    let mut r = Run::new(Response::Term);
    assert_eq!(r.step(0, Running, false), vec![]);
    let no_cgroup = JobState::Ended {
        code: 7,
        left: None,
    };
    assert_eq!(r.step(500, no_cgroup, false), vec![Action::Exit(7)]);
    let mut pids = Run::new(Response::Term);
    assert_eq!(pids.step(0, Gone, false), vec![Action::Exit(0)]);
}

#[test]
fn leftovers_get_term_then_kill_after_grace_then_up_to_kill_wait() {
    let mut r = Run::new(Response::Term);
    assert_eq!(
        r.step(0, ended(0, 2), false),
        vec![Action::TermLeftovers { left: 2 }]
    );
    assert_eq!(r.m.pause(), DRAIN_POLL);
    assert_eq!(r.step(9_999, ended(0, 2), false), vec![]);
    assert_eq!(r.step(1, ended(0, 1), false), vec![Action::KillLeftovers]);
    assert_eq!(r.step(4_999, ended(0, 1), false), vec![], "gave up early");
    assert_eq!(
        r.step(1, ended(0, 1), false),
        vec![Action::Exit(0)],
        "the job's own status: stopping leftovers is not acting on a crossing"
    );
}

#[test]
fn leftovers_that_leave_within_grace_are_not_killed() {
    let mut r = Run::new(Response::Term);
    r.step(0, ended(1, 3), false);
    assert_eq!(r.step(2_000, ended(1, 0), false), vec![Action::Exit(1)]);
}

#[test]
fn after_term_the_leftovers_are_killed_at_the_first_signals_grace() {
    let mut r = Run::new(Response::Term);
    r.step(0, Running, true);
    assert_eq!(
        r.step(4_000, ended(143, 1), false),
        vec![],
        "no second SIGTERM"
    );
    assert_eq!(r.step(5_999, ended(143, 1), false), vec![]);
    assert_eq!(r.step(1, ended(143, 1), false), vec![Action::KillLeftovers]);
    assert_eq!(
        r.step(20, ended(143, 0), false),
        vec![Action::Exit(EXIT_STOPPED)]
    );
}

#[test]
fn after_kill_guard_waits_at_most_kill_wait_for_the_cgroup_to_empty() {
    let mut r = Run::new(Response::Kill);
    r.step(0, Running, true);
    assert_eq!(r.step(50, ended(137, 1), false), vec![]);
    assert_eq!(r.step(4_999, ended(137, 1), false), vec![]);
    assert_eq!(
        r.step(1, ended(137, 1), false),
        vec![Action::Exit(EXIT_STOPPED)]
    );
}

#[test]
fn grace_zero_kills_leftovers_at_once() {
    let mut r = Run {
        m: Machine::new(Response::Term, Duration::ZERO, INTERVAL),
        clock: ManualClock::new(),
    };
    assert_eq!(
        r.step(0, ended(0, 1), false),
        vec![Action::TermLeftovers { left: 1 }, Action::KillLeftovers]
    );
}
