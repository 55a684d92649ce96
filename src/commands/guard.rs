//! `gpuledger guard`: wires the escalation ([`gpuledger::guard::machine`]) to the system clock,
//! the sampler, the job's signals and cgroup, and the output. The decisions are the machine's;
//! this file only observes, sleeps, signals and prints.

use crate::cli::{GuardAction, GuardArgs};
use anyhow::{bail, Context, Result};
use gpuledger::clock;
use gpuledger::findings::{analyze, Thresholds};
use gpuledger::guard::family;
use gpuledger::guard::job_cgroup::JobCgroup;
use gpuledger::guard::machine::{Action, JobState, Machine, Response};
use gpuledger::guard::{check, job_host_gpu, Policy, Target, Trip};
use gpuledger::job::Job;
use gpuledger::ledger::{Ledger, MemClass};
use gpuledger::outputs::json::rfc3339;
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sources::cgroup::{read_cgroup, read_proc_cgroup};
use gpuledger::sources::cgroup_procs::Follow;
use gpuledger::sources::meminfo::{parse_meminfo, read_meminfo};
use gpuledger::units::{human_bytes, SizeSpec};
use rustix::process::Signal;
use serde_json::json;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The parsed flags.
struct Settings {
    policy: Policy,
    grace: Duration,
    interval: Duration,
    response: Response,
    json: bool,
}

/// The flags as typed by clap (sizes, durations, exactly one of CMD or --pid), checked against
/// the machine: an absolute --min-available above MemTotal could never be met.
fn settings(args: &GuardArgs, root: &Root) -> Result<Settings> {
    if let SizeSpec::Bytes(min) = args.min_available {
        let total = read_meminfo(root)
            .ok()
            .and_then(|m| parse_meminfo(&m).values.get("MemTotal").copied());
        if let Some(total) = total.filter(|&t| min > t) {
            return Err(super::UsageError(format!(
                "--min-available {} is more than this machine's MemTotal ({}): guard would act at \
                 once; give a smaller size or a share such as 10%",
                human_bytes(min),
                human_bytes(total)
            ))
            .into());
        }
    }
    Ok(Settings {
        policy: Policy {
            min_available: args.min_available,
            max_driver_held: args.max_driver_held,
            max_job_host_gpu: args.max_job_host_gpu,
        },
        grace: args.grace,
        interval: args.interval,
        response: match args.action {
            GuardAction::None => Response::Warn,
            GuardAction::Term => Response::Term,
            GuardAction::Kill => Response::Kill,
        },
        json: args.json,
    })
}

/// The cgroup to follow with `--cgroup` or `--slurm-job`, holding its processes now.
fn follow(root: &Root, args: &GuardArgs) -> Result<Option<(Follow, Target)>> {
    let never = AtomicBool::new(false);
    let Some(job) = super::record::job_target(root, &args.job, args.interval, &never)? else {
        return Ok(None);
    };
    let Some(follow @ Follow::Cgroup(_)) = job.follow else {
        bail!(
            "guard follows a Slurm job through its cgroup, and job {} has none \
             (ProctrackType=proctrack/cgroup makes one); guard its processes with --pid",
            args.job.slurm_job.as_deref().unwrap_or("?")
        );
    };
    let mut target = Target::default();
    for p in follow.members(root).map(|m| m.pids).unwrap_or_default() {
        target.add(p);
    }
    if !target.alive() {
        bail!("{} has no processes to guard", follow.describe());
    }
    Ok(Some((follow, target)))
}

/// Starts the job (in a cgroup of its own when one can be made), or holds the `--pid`s.
fn start(args: &GuardArgs) -> Result<(Option<Job>, Target)> {
    if args.command.is_empty() {
        let mut target = Target::default();
        for &p in &args.pids {
            target.add(p);
        }
        if !target.alive() {
            bail!("none of --pid {:?} is a running process", args.pids);
        }
        return Ok((None, target));
    }
    // Orphans of the job become guard's children, not init's, so none drops out of its tree.
    let adopts = match family::adopt_orphans() {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "gpuledger guard: warning: cannot become the job's subreaper ({e}); a process \
                 of the job whose parent exits and that leaves its cgroup or group is not followed"
            );
            false
        }
    };
    let adopting = |t: Target| if adopts { t.adopting() } else { t };
    match JobCgroup::create() {
        Ok(cg) => {
            let job = cg
                .run_inside(|| Job::spawn_group(&args.command))?
                .context("guard")?;
            Ok((Some(job), adopting(Target::contained(cg))))
        }
        Err(e) => {
            eprintln!(
                "gpuledger guard: warning: containment is by process group only, plus the \
                 job's descendants found at each sample: {:#}. Give guard a writable cgroup \
                 v2 (run it as root, or under `systemd-run --user --scope -p Delegate=yes`).",
                anyhow::Error::from(e)
            );
            let job = Job::spawn_group(&args.command).context("guard")?;
            let mut target = adopting(Target::with_group(job.pid()));
            target.add(job.pid());
            Ok((Some(job), target))
        }
    }
}

pub fn run(ctx: &super::Ctx, args: &GuardArgs, t: &Thresholds) -> Result<ExitCode> {
    let root = ctx.open_root()?;
    let s = settings(args, &root)?;
    let live = root.is_live();
    let followed = follow(&root, args)?;
    let (job, target, follow) = match followed {
        Some((f, target)) => (None, target, Some(f)),
        None => {
            let (job, target) = start(args)?;
            (job, target, None)
        }
    };
    let roots: Vec<u32> = job
        .as_ref()
        .map(|j| vec![j.pid()])
        .unwrap_or_else(|| args.pids.clone());
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
    };
    let mut machine = Machine::new(s.response, s.grace, s.interval);
    loop {
        let tick = clock.now();
        let job = watched.observe()?;
        // Once the main process has ended only its leftovers are watched: no more samples.
        let (ledger, trip) = match job {
            JobState::Running => {
                let (ledger, trip) = watched.sample(&s.policy)?;
                (Some(ledger), trip)
            }
            _ => (None, None),
        };
        report_escapes(&mut watched.target, s.json);
        for action in machine.step(tick, job, trip) {
            if let Action::Exit(code) = action {
                report_survivors(&mut watched.target);
                return Ok(ExitCode::from(code));
            }
            perform(action, ledger.as_ref(), &mut watched.target, &s, t);
        }
        let spent = clock.now().saturating_duration_since(tick);
        std::thread::sleep(machine.pause().saturating_sub(spent));
    }
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
}

impl Watched {
    /// What became of the job: the started job's main process has ended (with the members left
    /// in its cgroup), or none of the `--pid`s is left.
    fn observe(&mut self) -> Result<JobState> {
        let Some(job) = self.job.as_mut() else {
            return Ok(if self.target.alive() {
                JobState::Running
            } else {
                JobState::Gone
            });
        };
        if self.end.is_none() {
            self.end = job.try_wait()?.map(|end| end.exit_code());
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
    fn sample(&mut self, policy: &Policy) -> Result<(Ledger, Option<Trip>)> {
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
        let ledger = Ledger::from_snapshot(self.sampler.sample()?);
        if live && !contained {
            for p in &ledger.processes {
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
        let trip = check(policy, &ledger, cg.as_ref());
        Ok((ledger, trip))
    }
}

/// Says which of the job's processes left its cgroup since the last look: guard keeps them as
/// the job's (they are its descendants) and signals them with it.
fn report_escapes(target: &mut Target, json_out: bool) {
    for e in target.take_escapes() {
        eprintln!(
            "gpuledger guard: process {} of the job left its cgroup (now in {}); it is still \
             the job's: guard watches it and signals it with the rest",
            e.pid,
            e.cgroup.as_deref().unwrap_or("an unknown cgroup")
        );
        if json_out {
            println!(
                "{}",
                json!({"event": "left_cgroup", "pid": e.pid, "cgroup": e.cgroup})
            );
        }
    }
}

/// Says so when, as guard exits, processes of the job are still running (it never claims a job
/// stopped while one survives).
fn report_survivors(target: &mut Target) {
    let left = target.survivors();
    if !left.is_empty() {
        eprintln!(
            "gpuledger guard: warning: {} process(es) of the job are still running as guard \
             exits: {left:?}",
            left.len()
        );
    }
}

/// Carries out one of the machine's actions (all but `Exit`, which ends the loop).
fn perform(
    action: Action,
    ledger: Option<&Ledger>,
    target: &mut Target,
    s: &Settings,
    t: &Thresholds,
) {
    match (action, ledger) {
        (Action::Trip { trip, response }, Some(ledger)) => {
            act(response, &trip, ledger, target, s, t)
        }
        (Action::KillAfterGrace { trip }, ledger) => {
            let pids = target.signal(Signal::KILL);
            eprintln!(
                "gpuledger guard: the job outlived --grace {:?}; sent SIGKILL to {pids:?}",
                s.grace
            );
            if let (Some(trip), Some(ledger)) = (trip, ledger) {
                event(s.json, "kill", &trip, ledger, &pids, &[]);
            }
        }
        (Action::TermLeftovers { left }, _) => {
            eprintln!(
                "gpuledger guard: the job's main process ended; stopping the {left} process(es) \
                 it left behind (SIGTERM, SIGKILL after --grace)"
            );
            target.signal(Signal::TERM);
        }
        (Action::KillLeftovers, _) => {
            let pids = target.signal(Signal::KILL);
            eprintln!(
                "gpuledger guard: the job outlived --grace {:?}; killed its cgroup ({pids:?})",
                s.grace
            );
        }
        // A crossing is only seen in a sample, which always comes with its ledger.
        (Action::Trip { .. }, None) | (Action::Exit(_), _) => {}
    }
}

/// Reports a crossing and applies --action.
fn act(
    response: Response,
    trip: &Trip,
    ledger: &Ledger,
    target: &mut Target,
    s: &Settings,
    t: &Thresholds,
) {
    let findings: Vec<String> = analyze(ledger, t)
        .into_iter()
        .map(|f| format!("{}: {}", f.kind.as_str(), f.message))
        .collect();
    let (verb, kind) = match response {
        Response::Warn => ("warning only (--action none)", "warn"),
        Response::Term => ("sending SIGTERM to the job", "term"),
        Response::Kill => ("sending SIGKILL to the job", "kill"),
    };
    eprintln!("gpuledger guard: {}; {verb}", trip.describe());
    for h in holders(ledger) {
        eprintln!("  {h}");
    }
    for f in &findings {
        eprintln!("  {f}");
    }
    let pids = match response {
        Response::Warn => target.pids(),
        Response::Term => target.signal(Signal::TERM),
        Response::Kill => target.signal(Signal::KILL),
    };
    event(s.json, kind, trip, ledger, &pids, &findings);
}

/// One line per process and device: what it holds on the device and in host RAM.
fn holders(ledger: &Ledger) -> Vec<String> {
    ledger
        .processes
        .iter()
        .flat_map(|p| p.devices().into_iter().map(move |d| (p, d)))
        .map(|(p, d)| {
            let c = |class| human_bytes(p.resident(d, class));
            format!(
                "{} on {d}: {} device-local, {} host-class",
                p.label(),
                c(MemClass::Device),
                c(MemClass::Host)
            )
        })
        .collect()
}

fn event(
    json_out: bool,
    kind: &str,
    trip: &Trip,
    ledger: &Ledger,
    pids: &[u32],
    findings: &[String],
) {
    if json_out {
        let line = json!({
            "event": kind,
            "time": rfc3339(ledger.time_ms),
            "trip": trip,
            "mem_total": ledger.host.mem_total,
            "mem_available": ledger.host.mem_available,
            "driver_held": ledger.host.driver_held(),
            "job_host_gpu": job_host_gpu(ledger),
            "pids": pids,
            "findings": findings,
        });
        println!("{line}");
    }
}
