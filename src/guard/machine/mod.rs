//! Guard's escalation as a state machine that is stepped, never run: it neither sleeps, signals
//! nor prints. Each [`Machine::step`] takes the time, what became of the job and this sample's
//! crossing, and answers with the [`Action`]s to take; `gpuledger guard` wires it to the system
//! clock, the sampler, the signals and the output, and tests drive it with a manual clock.
//!
//! States and transitions:
//!
//! ```text
//! Watching{warned} ── crossing, --action none ──────────────▶ Watching{warned: true}  [Trip(Warn)]
//!   │   (a crossing while warned says nothing; no crossing re-arms: warned = false)
//!   ├── crossing, --action term ───▶ Signalled{at: now, killed: false}          [Trip(Term)]
//!   └── crossing, --action kill ───▶ Signalled{at: now, killed: true}           [Trip(Kill)]
//! Signalled{at, killed: false} ── now ≥ at + grace ──▶ Signalled{killed: true}  [KillAfterGrace]
//!
//! any of the above ── --pid mode, none left ─────────────────▶ Done             [Exit]
//!                  ── main process ended, no cgroup or none left ─▶ Done         [Exit]
//!                  ── main process ended, members left:
//!                       Watching            ─▶ Draining{kill_at: now + grace}  [TermLeftovers]
//!                       Signalled, not killed ─▶ Draining{kill_at: at + grace}
//!                       Signalled, killed     ─▶ Reaping{until: now + KILL_WAIT}
//! Draining ── cgroup empty ──▶ Done [Exit] ── now ≥ kill_at ──▶ Reaping{until: now + KILL_WAIT}
//!                                                               [KillLeftovers]
//! Reaping  ── cgroup empty, or now ≥ until ──▶ Done [Exit]
//! ```
//!
//! The exit status is [`EXIT_STOPPED`] once guard has acted on a crossing (term or kill), else
//! the job's own (0 in `--pid` mode). Stopping what the main process left behind is not acting
//! on a crossing and keeps the job's status.

use super::Trip;
use std::time::{Duration, Instant};

/// Exit status when guard stopped the job.
pub const EXIT_STOPPED: u8 = 4;

/// How long a killed job's processes get to finish exiting before guard gives up waiting.
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// How often the job is looked at once it has been signalled, so its end is seen promptly.
const SIGNALLED_POLL: Duration = Duration::from_millis(50);

/// How often a cgroup that is emptying is looked at.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// What guard does on a crossing (`--action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// Warn only, once per crossing.
    Warn,
    /// SIGTERM, then SIGKILL once `grace` has passed.
    Term,
    /// SIGKILL at once.
    Kill,
}

/// What became of the guarded job, as seen just before this step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Still running.
    Running,
    /// The started job's main process ended with exit status `code`; `left` processes remain in
    /// its cgroup (`None`: it has none).
    Ended {
        /// The main process's exit status.
        code: u8,
        /// Members still in the job's cgroup.
        left: Option<usize>,
    },
    /// None of the guarded `--pid`s is alive.
    Gone,
}

/// What the binary must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A new crossing: report it and respond to it.
    Trip {
        /// Why.
        trip: Trip,
        /// What to send the job.
        response: Response,
    },
    /// The job outlived `grace` after SIGTERM: SIGKILL it. `trip` when the crossing still holds.
    KillAfterGrace {
        /// The crossing seen in this step, if any.
        trip: Option<Trip>,
    },
    /// The main process ended and left `left` processes in its cgroup: say so and SIGTERM them.
    TermLeftovers {
        /// How many.
        left: usize,
    },
    /// What the job left behind outlived `grace`: kill its cgroup.
    KillLeftovers,
    /// Guard is done: exit with this status.
    Exit(u8),
}

/// Where the escalation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Watching { warned: bool },
    Signalled { at: Instant, killed: bool },
    Draining { code: u8, kill_at: Instant },
    Reaping { code: u8, until: Instant },
    Done { code: u8 },
}

/// Guard's escalation (see the module docs for its states).
#[derive(Debug, Clone)]
pub struct Machine {
    response: Response,
    grace: Duration,
    interval: Duration,
    state: State,
}

impl Machine {
    /// A machine that responds to a crossing with `response`, escalates after `grace`, and
    /// samples every `interval` while nothing has happened.
    pub fn new(response: Response, grace: Duration, interval: Duration) -> Machine {
        Machine {
            response,
            grace,
            interval,
            state: State::Watching { warned: false },
        }
    }

    /// One step at `now`: `job` is what became of the job, `trip` this sample's crossing (none
    /// when no sample was taken because the job has ended).
    pub fn step(&mut self, now: Instant, job: JobState, trip: Option<Trip>) -> Vec<Action> {
        match (self.state, job) {
            (State::Done { code }, _) => vec![Action::Exit(code)],
            (State::Draining { .. } | State::Reaping { .. }, JobState::Ended { left, .. }) => {
                self.drain(now, left.unwrap_or(0))
            }
            (_, JobState::Running) => self.watch(now, trip),
            (_, JobState::Gone) => self.exit(self.status(0)),
            (_, JobState::Ended { code, left }) => self.main_ended(now, code, left),
        }
    }

    /// How long after this step's start the next one is due.
    pub fn pause(&self) -> Duration {
        match self.state {
            State::Watching { .. } => self.interval,
            State::Signalled { .. } => SIGNALLED_POLL,
            State::Draining { .. } | State::Reaping { .. } | State::Done { .. } => DRAIN_POLL,
        }
    }

    /// Whether guard has acted on a crossing (sent SIGTERM or SIGKILL).
    fn acted(&self) -> bool {
        matches!(self.state, State::Signalled { .. })
    }

    fn status(&self, own: u8) -> u8 {
        if self.acted() {
            EXIT_STOPPED
        } else {
            own
        }
    }

    fn exit(&mut self, code: u8) -> Vec<Action> {
        self.state = State::Done { code };
        vec![Action::Exit(code)]
    }

    fn watch(&mut self, now: Instant, trip: Option<Trip>) -> Vec<Action> {
        match (self.state, trip) {
            (State::Watching { warned: true }, Some(_)) if self.response == Response::Warn => {
                Vec::new()
            }
            (State::Watching { .. }, Some(trip)) => {
                self.state = match self.response {
                    Response::Warn => State::Watching { warned: true },
                    Response::Term => State::Signalled {
                        at: now,
                        killed: false,
                    },
                    Response::Kill => State::Signalled {
                        at: now,
                        killed: true,
                    },
                };
                vec![Action::Trip {
                    trip,
                    response: self.response,
                }]
            }
            (State::Watching { .. }, None) => {
                self.state = State::Watching { warned: false };
                Vec::new()
            }
            (State::Signalled { at, killed: false }, trip) if now >= at + self.grace => {
                self.state = State::Signalled { at, killed: true };
                vec![Action::KillAfterGrace { trip }]
            }
            _ => Vec::new(),
        }
    }

    fn main_ended(&mut self, now: Instant, code: u8, left: Option<usize>) -> Vec<Action> {
        let code = self.status(code);
        let Some(left) = left else {
            return self.exit(code);
        };
        match self.state {
            State::Signalled { killed: true, .. } => {
                self.state = State::Reaping {
                    code,
                    until: now + KILL_WAIT,
                };
                self.drain(now, left)
            }
            State::Signalled { at, .. } => {
                self.state = State::Draining {
                    code,
                    kill_at: at + self.grace,
                };
                self.drain(now, left)
            }
            _ if left == 0 => self.exit(code),
            _ => {
                self.state = State::Draining {
                    code,
                    kill_at: now + self.grace,
                };
                let mut actions = vec![Action::TermLeftovers { left }];
                actions.extend(self.drain(now, left));
                actions
            }
        }
    }

    fn drain(&mut self, now: Instant, left: usize) -> Vec<Action> {
        match self.state {
            State::Draining { code, .. } | State::Reaping { code, .. } if left == 0 => {
                self.exit(code)
            }
            State::Draining { code, kill_at } if now >= kill_at => {
                self.state = State::Reaping {
                    code,
                    until: now + KILL_WAIT,
                };
                vec![Action::KillLeftovers]
            }
            State::Reaping { code, until } if now >= until => self.exit(code),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
