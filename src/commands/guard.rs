//! `gpuledger guard`.

use crate::cli::{GuardAction, GuardArgs};
use anyhow::{bail, Context, Result};
use gpuledger::findings::{analyze, Thresholds};
use gpuledger::guard::job_cgroup::JobCgroup;
use gpuledger::guard::{check, job_host_gpu, Policy, Target, Trip};
use gpuledger::job::Job;
use gpuledger::ledger::{Ledger, MemClass};
use gpuledger::outputs::json::rfc3339;
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sources::cgroup::{read_cgroup, read_proc_cgroup};
use gpuledger::sources::meminfo::{parse_meminfo, read_meminfo};
use gpuledger::units::{human_bytes, SizeSpec};
use rustix::process::Signal;
use serde_json::json;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Exit status when guard stopped the job.
const EXIT_STOPPED: u8 = 4;

/// How long a killed job's processes get to finish exiting before guard gives up waiting.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// The parsed flags.
struct Settings {
    policy: Policy,
    grace: Duration,
    interval: Duration,
    action: GuardAction,
    json: bool,
}

/// Where the escalation stands.
#[derive(Default)]
struct State {
    warned: bool,
    acted: Option<Instant>,
    killed: bool,
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
        action: args.action,
        json: args.json,
    })
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
    match JobCgroup::create() {
        Ok(cg) => {
            let job = cg
                .run_inside(|| Job::spawn_group(&args.command))?
                .context("guard")?;
            Ok((Some(job), Target::contained(cg)))
        }
        Err(e) => {
            eprintln!(
                "gpuledger guard: warning: containment is by process group only, so a process \
                 of the job that calls setsid escapes it: {:#}. Give guard a writable cgroup v2 \
                 (run it as root, or under `systemd-run --user --scope -p Delegate=yes`).",
                anyhow::Error::from(e)
            );
            let job = Job::spawn_group(&args.command).context("guard")?;
            let mut target = Target::with_group(job.pid());
            target.add(job.pid());
            Ok((Some(job), target))
        }
    }
}

/// Fresh counters every interval: the job's processes are few, so every fd table is re-read
/// each sample instead of on the whole-machine cadences, and a new GPU fd is seen at once.
fn sampler_options() -> SamplerOptions {
    SamplerOptions {
        check_period: Duration::ZERO,
        rescan_period: Duration::ZERO,
        ..SamplerOptions::default()
    }
}

pub fn run(ctx: &super::Ctx, args: &GuardArgs, t: &Thresholds) -> Result<ExitCode> {
    let root = ctx.open_root()?;
    let s = settings(args, &root)?;
    let live = root.is_live();
    let (mut job, mut target) = start(args)?;
    let roots: Vec<u32> = job
        .as_ref()
        .map(|j| vec![j.pid()])
        .unwrap_or_else(|| args.pids.clone());
    let scope = if live {
        Scope::Tree(roots.iter().copied().collect())
    } else {
        Scope::All
    };
    let mut sampler = Sampler::new(root, scope, sampler_options());
    let mut state = State::default();
    loop {
        let tick = Instant::now();
        if let Some(code) = ended(&mut job, &mut target, &state, &s)? {
            return Ok(code);
        }
        let contained = target.cgroup().is_some();
        if live && contained {
            sampler.set_scope(Scope::Pids(target.pids().into_iter().collect()));
        }
        let ledger = Ledger::from_snapshot(&sampler.sample()?);
        if live && !contained {
            for p in &ledger.processes {
                target.add(p.pid);
            }
        }
        // A contained job's own cgroup has no controllers; its limit is the one it was started in.
        let limit_of = if contained {
            std::process::id()
        } else {
            roots[0]
        };
        let cg = live
            .then(|| read_proc_cgroup(sampler.root(), limit_of))
            .flatten()
            .map(|p| read_cgroup(sampler.root(), &p));
        let trip = check(&s.policy, &ledger, cg.as_ref());
        step(&mut state, trip, &ledger, &mut target, &s, t);
        let wait = if state.acted.is_some() {
            Duration::from_millis(50)
        } else {
            s.interval
        };
        std::thread::sleep(wait.saturating_sub(tick.elapsed()));
    }
}

/// The exit status once the job is over: the started job's main process has ended (and the rest
/// of its cgroup has been stopped), or none of the `--pid`s is left.
fn ended(
    job: &mut Option<Job>,
    target: &mut Target,
    state: &State,
    s: &Settings,
) -> Result<Option<ExitCode>> {
    let stopped = |own: u8| {
        ExitCode::from(if state.acted.is_some() {
            EXIT_STOPPED
        } else {
            own
        })
    };
    let Some(j) = job.as_mut() else {
        return Ok((!target.alive()).then(|| stopped(0)));
    };
    let Some(end) = j.try_wait()? else {
        return Ok(None);
    };
    stop_the_rest(target, state, s);
    Ok(Some(stopped(end.exit_code())))
}

/// The job is its cgroup: when its main process ends, what it left behind is stopped too
/// (SIGTERM, SIGKILL once --grace has passed since the first signal).
fn stop_the_rest(target: &mut Target, state: &State, s: &Settings) {
    let Some(left) = target.cgroup().map(|cg| cg.pids().len()) else {
        return;
    };
    match state.acted {
        Some(_) if state.killed => {}
        Some(at) => kill_after(target, at + s.grace, s),
        None if left > 0 => {
            eprintln!(
                "gpuledger guard: the job's main process ended; stopping the {left} process(es) \
                 it left behind (SIGTERM, SIGKILL after --grace)"
            );
            target.signal(Signal::TERM);
            kill_after(target, Instant::now() + s.grace, s);
        }
        None => return,
    }
    if let Some(cg) = target.cgroup() {
        cg.wait_empty(Instant::now() + KILL_WAIT);
    }
}

/// Kills the job's cgroup if it still has members at `deadline`.
fn kill_after(target: &mut Target, deadline: Instant, s: &Settings) {
    if target.cgroup().is_some_and(|cg| !cg.wait_empty(deadline)) {
        let pids = target.signal(Signal::KILL);
        eprintln!(
            "gpuledger guard: the job outlived --grace {:?}; killed its cgroup ({pids:?})",
            s.grace
        );
    }
}

/// One step of the escalation: warn or signal on a new crossing, SIGKILL once --grace passed.
fn step(
    state: &mut State,
    trip: Option<Trip>,
    ledger: &Ledger,
    target: &mut Target,
    s: &Settings,
    t: &Thresholds,
) {
    match (trip, state.acted) {
        (Some(trip), None) => {
            if s.action == GuardAction::None && state.warned {
                return;
            }
            act(state, &trip, ledger, target, s, t);
        }
        (None, None) => state.warned = false,
        (trip, Some(at)) if !state.killed && at.elapsed() >= s.grace => {
            let pids = target.signal(Signal::KILL);
            state.killed = true;
            eprintln!(
                "gpuledger guard: the job outlived --grace {:?}; sent SIGKILL to {pids:?}",
                s.grace
            );
            if let Some(trip) = trip {
                event(s.json, "kill", &trip, ledger, &pids, &[]);
            }
        }
        _ => {}
    }
}

/// Reports a crossing and applies --action.
fn act(
    state: &mut State,
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
    let (verb, kind) = match s.action {
        GuardAction::None => ("warning only (--action none)", "warn"),
        GuardAction::Term => ("sending SIGTERM to the job", "term"),
        GuardAction::Kill => ("sending SIGKILL to the job", "kill"),
    };
    eprintln!("gpuledger guard: {}; {verb}", trip.describe());
    for h in holders(ledger) {
        eprintln!("  {h}");
    }
    for f in &findings {
        eprintln!("  {f}");
    }
    let pids = match s.action {
        GuardAction::None => {
            state.warned = true;
            target.pids()
        }
        GuardAction::Term => {
            state.acted = Some(Instant::now());
            target.signal(Signal::TERM)
        }
        GuardAction::Kill => {
            state.acted = Some(Instant::now());
            state.killed = true;
            target.signal(Signal::KILL)
        }
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
