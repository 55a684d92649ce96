//! Guarding a job: the counterpart of `recording::run`. Wires the escalation ([`super::machine`])
//! to a clock, the sampler, the job's signals and cgroup; what happens is reported as
//! [`Event`]s, which the caller prints. The decisions are the machine's; this loop only
//! observes, sleeps and signals.

use super::job_cgroup::{ContainError, JobCgroup};
use super::machine::{Action, JobState, Machine, Response};
use super::{check, family, Escape, Policy, Target, Trip};
use crate::clock;
use crate::findings::{Finding, Thresholds};
use crate::job::Job;
use crate::ledger::Ledger;
use crate::observe::Observer;
use crate::recording::job_target::{job_target, JobSpec};
use crate::recording::trace::{Losses, Registrations, Started, TraceOff, TracePlan};
use crate::recording::trace_ze::ZeOff;
use crate::root::Root;
use crate::sampler::{SampleError, Sampler, SamplerOptions, Scope};
use crate::sources::cgroup::{read_cgroup, read_proc_cgroup};
use crate::sources::cgroup_procs::{Follow, FollowError};
use crate::sources::meminfo::{parse_meminfo, read_meminfo};
use crate::units::{human_bytes, SizeSpec};
use rustix::process::Signal;
use std::io;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use thiserror::Error;

/// Which job is guarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStart {
    /// A command guard starts (in a cgroup of its own where one can be made).
    Command(Vec<String>),
    /// Running processes.
    Pids(Vec<u32>),
    /// The processes of a cgroup or Slurm job, joining as they come.
    Job(JobSpec),
}

/// What to guard and when to act, checked.
#[derive(Debug, Clone)]
pub struct GuardPlan {
    /// When to act.
    pub policy: Policy,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Sampling interval.
    pub interval: Duration,
    /// What to do when the policy trips.
    pub response: Response,
    /// Finding thresholds (the findings are quoted when guard acts).
    pub thresholds: Thresholds,
    /// API-level tracing of a started command: its registered host memory (which no counter
    /// shows) joins the job's host-class bytes.
    pub trace: TracePlan,
    /// The job.
    pub start: JobStart,
}

/// Why guarding could not start or go on.
#[derive(Debug, Error)]
pub enum GuardError {
    /// An absolute `--min-available` above MemTotal could never be met.
    #[error(
        "--min-available {min} is more than this machine's MemTotal ({total}): guard would act \
         at once; give a smaller size or a share such as 10%"
    )]
    FloorAboveTotal {
        /// The floor, in words.
        min: String,
        /// MemTotal, in words.
        total: String,
    },
    /// The cgroup or Slurm job was not found.
    #[error(transparent)]
    Follow(#[from] FollowError),
    /// A Slurm job tracked without cgroups.
    #[error(
        "guard follows a Slurm job through its cgroup, and job {0} has none \
         (ProctrackType=proctrack/cgroup makes one); guard its processes with --pid"
    )]
    NoJobCgroup(String),
    /// The followed cgroup is empty.
    #[error("{0} has no processes to guard")]
    EmptyCgroup(String),
    /// No `--pid` is running.
    #[error("none of --pid {0:?} is a running process")]
    NoPids(Vec<u32>),
    /// The command could not be started.
    #[error("guard")]
    Spawn(#[source] io::Error),
    /// The job's cgroup could not be entered.
    #[error("guard")]
    Contain(#[source] ContainError),
    /// Waiting for the job failed.
    #[error("waiting for the job")]
    Wait(#[source] io::Error),
    /// A sample failed.
    #[error(transparent)]
    Sample(#[from] SampleError),
}

/// What happened, for the caller to print.
#[derive(Debug)]
pub enum Event<'a> {
    /// Guard cannot adopt the job's orphans.
    NoSubreaper(&'a io::Error),
    /// No cgroup of its own for the job: containment is by process group.
    Uncontained(&'a ContainError),
    /// The command's API calls are not traced, though tracing was expected.
    Untraced(&'a TraceOff),
    /// Level Zero calls are not traced (another tool holds the loader's entry points).
    LevelZeroUntraced(&'a ZeOff),
    /// Traced events that did not count: lost on the way, or sent by processes outside the job
    /// (refused). Said when the first are seen and, with the totals, as guard ends.
    TraceLosses {
        /// The totals so far.
        losses: Losses,
        /// Whether guard is ending.
        ending: bool,
    },
    /// Guard is watching: the job's processes as first seen, how often, and what it will do.
    Watching {
        /// The job's processes.
        pids: &'a [u32],
        /// The sampling interval.
        interval: Duration,
        /// The response to a crossing.
        response: Response,
        /// The limits.
        policy: &'a Policy,
    },
    /// A process of the job left its cgroup (it is still the job's).
    LeftCgroup(&'a Escape),
    /// The policy tripped; `pids` got the response (or would have, for a warning).
    Tripped {
        /// The response.
        response: Response,
        /// Why.
        trip: &'a Trip,
        /// The sample that tripped it.
        ledger: &'a Ledger,
        /// The findings on that sample.
        findings: &'a [Finding],
        /// The job's processes.
        pids: &'a [u32],
    },
    /// The job outlived the grace after SIGTERM and got SIGKILL.
    KilledAfterGrace {
        /// What tripped, and the sample, when known.
        trip: Option<(&'a Trip, &'a Ledger)>,
        /// The processes killed.
        pids: &'a [u32],
    },
    /// The main process ended; what it left behind gets SIGTERM.
    TermLeftovers {
        /// How many processes were left.
        left: usize,
    },
    /// The leftovers outlived the grace and were killed.
    KilledLeftovers {
        /// The processes killed.
        pids: &'a [u32],
    },
    /// Processes of the job still run as guard exits.
    Survivors {
        /// Their pids.
        pids: &'a [u32],
    },
    /// Guard was sent a signal and passed it to every process of the job.
    Relayed {
        /// The signal.
        signal: rustix::process::Signal,
        /// The processes it reached.
        pids: &'a [u32],
    },
    /// Processes a multiplexer's server, running before the job, started while it ran: outside
    /// the job, so guard did not stop them.
    HandedOff {
        /// The multiplexers whose servers started them.
        via: &'a [&'static str],
        /// Their pids.
        pids: &'a [u32],
    },
}

/// Guards the job of `plan` on the machine behind `root` until it ends; returns the status to
/// exit with (the job's, or 4 when guard stopped it).
pub fn guard(
    root: Root,
    plan: &GuardPlan,
    mut report: impl FnMut(Event<'_>),
) -> Result<u8, GuardError> {
    check_floor(&plan.policy, &root)?;
    let live = root.is_live();
    let mut registrations = None;
    let (job, target, follow) = match &plan.start {
        JobStart::Job(spec) => {
            let (f, target) = follow(&root, spec, plan.interval)?;
            (None, target, Some(f))
        }
        JobStart::Pids(pids) => (None, held(pids)?, None),
        JobStart::Command(argv) => {
            let (job, target, calls) = start(argv, &plan.trace, &mut report)?;
            registrations = calls;
            (Some(job), target, None)
        }
    };
    let roots: Vec<u32> = match (&job, &plan.start) {
        (Some(j), _) => vec![j.pid()],
        (None, JobStart::Pids(p)) => p.clone(),
        (None, _) => Vec::new(),
    };
    let scope = if follow.is_some() {
        Scope::Pids(Default::default())
    } else if live {
        Scope::Tree(roots.iter().copied().collect())
    } else {
        Scope::All
    };
    let clock = clock::system();
    let mut watched = Watched {
        // Fresh counters every tick: the job's processes are few, so every fd table is re-read
        // each sample instead of on the whole-machine cadences, and a new GPU fd is seen at once.
        sampler: Sampler::new(root, scope, SamplerOptions::fresh()).with_clock(clock.clone()),
        job,
        end: None,
        target,
        live,
        limit_root: roots.first().copied(),
        follow,
        registrations,
        trace_losses: Losses::default(),
        told_losses: false,
    };
    report(Event::Watching {
        pids: &watched.target.pids(),
        interval: plan.interval,
        response: plan.response,
        policy: &plan.policy,
    });
    let mut observer = Observer::new(plan.thresholds.clone());
    let mut machine = Machine::new(plan.response, plan.grace, plan.interval);
    loop {
        let tick = clock.now();
        // A signal sent to guard went to the main process at once; the rest of the job gets it now.
        let relay = watched
            .job
            .as_ref()
            .and_then(|j| Some((j.take_signal()?, j.pid())));
        if let Some((signal, main)) = relay {
            let mut pids = watched.target.relay(signal, main);
            pids.insert(0, main);
            report(Event::Relayed {
                signal,
                pids: &pids,
            });
        }
        let state = watched.state()?;
        // Once the main process has ended only its leftovers are watched: no more samples.
        let (seen, trip) = match state {
            JobState::Running => {
                let (seen, trip) = watched.sample(&plan.policy, &mut observer)?;
                if watched.trace_losses.any() && !watched.told_losses {
                    watched.told_losses = true;
                    report(Event::TraceLosses {
                        losses: watched.trace_losses,
                        ending: false,
                    });
                }
                (Some(seen), trip)
            }
            _ => (None, None),
        };
        for e in watched.target.take_escapes() {
            report(Event::LeftCgroup(&e));
        }
        for action in machine.step(tick, state, trip) {
            if let Action::Exit(code) = action {
                watched.say_trace_end(&plan.trace, &mut report);
                let pids = watched.target.survivors();
                if !pids.is_empty() {
                    report(Event::Survivors { pids: &pids });
                }
                let (via, handed) = watched.target.handed_off();
                if !handed.is_empty() {
                    report(Event::HandedOff {
                        via: &via,
                        pids: &handed,
                    });
                }
                return Ok(code);
            }
            perform(action, seen.as_ref(), &mut watched.target, &mut report);
        }
        let spent = clock.now().saturating_duration_since(tick);
        let pause = machine.pause().saturating_sub(spent);
        // A running job's end cuts the pause short: guard returns with it, not an interval later.
        match (&watched.job, watched.end) {
            (Some(job), None) => job.pause_until_end(pause),
            _ => std::thread::sleep(pause),
        }
    }
}

/// Refuses an absolute floor above MemTotal: guard would act at once.
fn check_floor(policy: &Policy, root: &Root) -> Result<(), GuardError> {
    let SizeSpec::Bytes(min) = policy.min_available else {
        return Ok(());
    };
    let total = read_meminfo(root)
        .ok()
        .and_then(|m| parse_meminfo(&m).values.get("MemTotal").copied());
    match total.filter(|&t| min > t) {
        Some(total) => Err(GuardError::FloorAboveTotal {
            min: human_bytes(min),
            total: human_bytes(total),
        }),
        None => Ok(()),
    }
}

/// The cgroup of `spec`, holding its processes now.
fn follow(root: &Root, spec: &JobSpec, poll: Duration) -> Result<(Follow, Target), GuardError> {
    let never = AtomicBool::new(false);
    let found = job_target(root, spec, poll, &never, |k| std::env::var(k).ok())?;
    let Some(follow @ Follow::Cgroup(_)) = found.and_then(|j| j.follow) else {
        let id = match spec {
            JobSpec::SlurmJob(id) | JobSpec::Cgroup(id) => id.clone(),
        };
        return Err(GuardError::NoJobCgroup(id));
    };
    let mut target = Target::default();
    for p in follow.members(root).map(|m| m.pids).unwrap_or_default() {
        target.add(p);
    }
    if !target.alive() {
        return Err(GuardError::EmptyCgroup(follow.describe()));
    }
    Ok((follow, target))
}

/// The `--pid`s, while one of them runs.
fn held(pids: &[u32]) -> Result<Target, GuardError> {
    let mut target = Target::default();
    for &p in pids {
        target.add(p);
    }
    if !target.alive() {
        return Err(GuardError::NoPids(pids.to_vec()));
    }
    Ok(target)
}

/// Starts the job, in a cgroup of its own when one can be made, traced as `trace` says.
fn start(
    argv: &[String],
    trace: &TracePlan,
    report: &mut impl FnMut(Event<'_>),
) -> Result<(Job, Target, Option<Registrations>), GuardError> {
    // Orphans of the job become guard's children, not init's, so none drops out of its tree.
    let adopts = match family::adopt_orphans() {
        Ok(()) => true,
        Err(e) => {
            report(Event::NoSubreaper(&e));
            false
        }
    };
    let adopting = |t: Target| if adopts { t.adopting() } else { t };
    let (env, calls) = begin_trace(trace, report);
    match JobCgroup::create() {
        Ok(cg) => {
            let channel = calls.as_ref().and_then(|r| r.job_end());
            let job = cg
                .run_inside(|| Job::spawn_group(argv, &env, channel))
                .map_err(GuardError::Contain)?
                .map_err(GuardError::Spawn)?;
            let calls = calls.map(started);
            Ok((job, adopting(Target::contained(cg)), calls))
        }
        Err(e) => {
            report(Event::Uncontained(&e));
            let channel = calls.as_ref().and_then(|r| r.job_end());
            let job = Job::spawn_group(argv, &env, channel).map_err(GuardError::Spawn)?;
            let calls = calls.map(started);
            let mut target = adopting(Target::with_group(job.pid()));
            target.add(job.pid());
            Ok((job, target, calls))
        }
    }
}

/// The registrations of a job that holds its own end of the channel now.
fn started(mut r: Registrations) -> Registrations {
    r.job_started();
    r
}

/// The environment that traces the job and the registrations its calls will show, when `trace`
/// says to; why not is reported where a user expects to know.
fn begin_trace(
    trace: &TracePlan,
    report: &mut impl FnMut(Event<'_>),
) -> (Vec<(String, String)>, Option<Registrations>) {
    let started = match trace {
        TracePlan::On(lib) => Started::begin(lib).map_err(|e| TraceOff::Socket(e.to_string())),
        TracePlan::Off(why) => Err(why.clone()),
    };
    match started {
        Ok(started) => {
            if let Some(why) = started.level_zero_notice() {
                report(Event::LevelZeroUntraced(why));
            }
            let env = started.env.clone();
            (env, Some(Registrations::new(started)))
        }
        Err(why) => {
            if why.worth_saying() {
                report(Event::Untraced(&why));
            }
            (Vec::new(), None)
        }
    }
}

/// A sample of the job with its findings.
struct Seen {
    ledger: Ledger,
    findings: Vec<Finding>,
}

/// The guarded job and the sampler that watches it.
struct Watched {
    sampler: Sampler,
    job: Option<Job>,
    /// The started job's exit status, once its main process has ended.
    end: Option<u8>,
    target: Target,
    live: bool,
    /// The process whose cgroup limit applies when the job has no cgroup of its own.
    limit_root: Option<u32>,
    /// The followed cgroup (`--cgroup`, `--slurm-job`), whose members join the job as they come.
    follow: Option<Follow>,
    /// The started job's traced registrations of host memory.
    registrations: Option<Registrations>,
    /// Traced events that did not count, all along.
    trace_losses: Losses,
    /// Whether the first losses were said.
    told_losses: bool,
}

impl Watched {
    /// Says, as guard ends, the traced events that did not count and a tracer that sent nothing.
    fn say_trace_end(&self, trace: &TracePlan, report: &mut impl FnMut(Event<'_>)) {
        let Some(r) = &self.registrations else {
            return;
        };
        if self.trace_losses.any() {
            report(Event::TraceLosses {
                losses: self.trace_losses,
                ending: true,
            });
        }
        if let (false, TracePlan::On(lib)) = (r.heard(), trace) {
            report(Event::Untraced(&TraceOff::Silent(lib.clone())));
        }
    }

    /// What became of the job: the started job's main process has ended (with the members left
    /// in its cgroup), or none of the `--pid`s is left.
    fn state(&mut self) -> Result<JobState, GuardError> {
        let Some(job) = self.job.as_mut() else {
            return Ok(if self.target.alive() {
                JobState::Running
            } else {
                JobState::Gone
            });
        };
        if self.end.is_none() {
            self.end = job
                .try_wait()
                .map_err(GuardError::Wait)?
                .map(|end| end.exit_code());
        }
        Ok(match self.end {
            None => JobState::Running,
            Some(code) => JobState::Ended {
                code,
                left: self.target.follows_family().then(|| self.target.left()),
            },
        })
    }

    /// Fresh counters for the job, and the policy's verdict on them.
    fn sample(
        &mut self,
        policy: &Policy,
        observer: &mut Observer,
    ) -> Result<(Seen, Option<Trip>), GuardError> {
        let (live, contained) = (self.live, self.target.cgroup().is_some());
        if let Some(f) = &self.follow {
            let members = f.members(self.sampler.root()).unwrap_or_default().pids;
            for &p in &members {
                self.target.add(p);
            }
            self.sampler.set_scope(Scope::Pids(members));
        } else if live && contained {
            let members = self.target.pids().into_iter().collect();
            self.sampler.set_scope(Scope::Pids(members));
        }
        if let Some(r) = self.registrations.as_mut() {
            let (registered, losses) = r.live();
            observer.set_registered(registered);
            self.trace_losses.add(losses);
        }
        let seen = observer.sample(&mut self.sampler)?;
        if live && !contained {
            for p in &seen.ledger.processes {
                self.target.add(p.pid);
            }
        }
        // A contained job's own cgroup has no controllers; its limit is the one it was started in.
        let limit_of = if contained {
            Some(std::process::id())
        } else {
            self.limit_root
        };
        let path = match &self.follow {
            // The followed cgroup's own limit (Slurm sets memory.max on job_<id>).
            Some(Follow::Cgroup(dir)) => dir.strip_prefix("sys/fs/cgroup").map(String::from),
            _ => limit_of
                .filter(|_| live)
                .and_then(|pid| read_proc_cgroup(self.sampler.root(), pid)),
        };
        let cg = path.map(|p| read_cgroup(self.sampler.root(), &p));
        let trip = check(policy, &seen.ledger, cg.as_ref());
        Ok((
            Seen {
                ledger: seen.ledger,
                findings: seen.findings,
            },
            trip,
        ))
    }
}

/// Carries out one of the machine's actions (all but `Exit`, which ends the loop).
fn perform(
    action: Action,
    seen: Option<&Seen>,
    target: &mut Target,
    report: &mut impl FnMut(Event<'_>),
) {
    match (action, seen) {
        (Action::Trip { trip, response }, Some(seen)) => {
            let pids = match response {
                Response::Warn => target.pids(),
                Response::Term => target.signal(Signal::TERM),
                Response::Kill => target.signal(Signal::KILL),
            };
            report(Event::Tripped {
                response,
                trip: &trip,
                ledger: &seen.ledger,
                findings: &seen.findings,
                pids: &pids,
            });
        }
        (Action::KillAfterGrace { trip }, seen) => {
            let pids = target.signal(Signal::KILL);
            let trip = trip.as_ref().zip(seen.map(|s| &s.ledger));
            report(Event::KilledAfterGrace { trip, pids: &pids });
        }
        (Action::TermLeftovers { left }, _) => {
            report(Event::TermLeftovers { left });
            target.signal(Signal::TERM);
        }
        (Action::KillLeftovers, _) => {
            let pids = target.signal(Signal::KILL);
            report(Event::KilledLeftovers { pids: &pids });
        }
        // A crossing is only seen in a sample, which always comes with its ledger.
        (Action::Trip { .. }, None) | (Action::Exit(_), _) => {}
    }
}
