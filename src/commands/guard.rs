//! `gpuledger guard`.

use crate::cli::{GuardAction, GuardArgs};
use anyhow::{bail, Context, Result};
use gpuledger::findings::{analyze, Thresholds};
use gpuledger::guard::{check, Policy, Target, Trip};
use gpuledger::job::Job;
use gpuledger::ledger::Ledger;
use gpuledger::outputs::json::rfc3339;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::units::{human_bytes, parse_duration, parse_size_spec, SizeSpec};
use rustix::process::Signal;
use serde_json::json;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Exit status when guard stopped the job.
const EXIT_STOPPED: u8 = 4;

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
            "driver_held": ledger.host.driver_held().map(|e| e.bytes),
            "driver_held_source": ledger.host.driver_held().map(|e| e.counter.as_str()),
            "pids": pids,
            "findings": findings,
        });
        println!("{line}");
    }
}

pub fn run(root: Option<&std::path::Path>, args: &GuardArgs, t: &Thresholds) -> Result<ExitCode> {
    let min_available = parse_size_spec(&args.min_available).context("in --min-available")?;
    let max_driver_held = match args
        .max_driver_held
        .as_deref()
        .map(parse_size_spec)
        .transpose()
        .context("in --max-driver-held")?
    {
        Some(SizeSpec::Bytes(b)) => Some(b),
        Some(SizeSpec::Percent(_)) => bail!("--max-driver-held takes a size such as 24GiB"),
        None => None,
    };
    let policy = Policy {
        min_available,
        max_driver_held,
    };
    let grace = parse_duration(&args.grace).map_err(anyhow::Error::msg)?;
    let interval = parse_duration(&args.interval).map_err(anyhow::Error::msg)?;
    if args.command.is_empty() == args.pids.is_empty() {
        bail!("guard needs either -- CMD ARGS… or --pid PID…");
    }
    let root = super::open_root(root)?;
    let live = root.is_live();
    let mut job = if args.command.is_empty() {
        None
    } else {
        Some(Job::spawn_group(&args.command).context("guard")?)
    };
    let mut target = match &job {
        Some(j) => Target::with_group(j.pid()),
        None => Target::default(),
    };
    let roots: Vec<u32> = job
        .as_ref()
        .map(|j| vec![j.pid()])
        .unwrap_or_else(|| args.pids.clone());
    for &p in &roots {
        target.add(p);
    }
    if job.is_none() && !target.alive() {
        bail!("none of --pid {:?} is a running process", args.pids);
    }
    let scope = if live {
        Scope::Tree(roots.iter().copied().collect())
    } else {
        Scope::All
    };
    let mut sampler = Sampler::new(root, scope, SamplerOptions::default());
    let mut warned = false;
    let mut acted: Option<Instant> = None;
    let mut killed = false;
    loop {
        let tick = Instant::now();
        if let Some(j) = job.as_mut() {
            if let Some(end) = j.try_wait()? {
                return Ok(ExitCode::from(if acted.is_some() {
                    EXIT_STOPPED
                } else {
                    end.exit_code()
                }));
            }
        } else if !target.alive() {
            return Ok(ExitCode::from(if acted.is_some() {
                EXIT_STOPPED
            } else {
                0
            }));
        }
        let ledger = Ledger::from_snapshot(&sampler.sample()?);
        if live {
            for p in &ledger.processes {
                target.add(p.pid);
            }
        }
        let cg = if live {
            gpuledger::sources::cgroup::read_proc_cgroup(sampler.root(), roots[0])
                .map(|p| gpuledger::sources::cgroup::read_cgroup(sampler.root(), &p))
        } else {
            None
        };
        match (check(&policy, &ledger, cg.as_ref()), acted) {
            (Some(trip), None) => {
                let findings: Vec<String> = analyze(&ledger, t)
                    .into_iter()
                    .map(|f| format!("{}: {}", f.kind.as_str(), f.message))
                    .collect();
                let holders: Vec<String> = ledger
                    .processes
                    .iter()
                    .flat_map(|p| p.devices().into_iter().map(move |d| (p, d)))
                    .map(|(p, d)| {
                        let c = |class| human_bytes(p.resident(d, class));
                        format!(
                            "{} on {d}: {} device-local, {} host-class",
                            p.label(),
                            c(gpuledger::ledger::MemClass::Device),
                            c(gpuledger::ledger::MemClass::Host)
                        )
                    })
                    .collect();
                let verb = match args.action {
                    GuardAction::None => "warning only (--action none)",
                    GuardAction::Term => "sending SIGTERM to the job",
                    GuardAction::Kill => "sending SIGKILL to the job",
                };
                if args.action == GuardAction::None && warned {
                    std::thread::sleep(interval.saturating_sub(tick.elapsed()));
                    continue;
                }
                eprintln!("gpuledger guard: {}; {verb}", trip.describe());
                for h in &holders {
                    eprintln!("  {h}");
                }
                for f in &findings {
                    eprintln!("  {f}");
                }
                let pids = match args.action {
                    GuardAction::None => {
                        warned = true;
                        target.pids()
                    }
                    GuardAction::Term => {
                        acted = Some(Instant::now());
                        target.signal(Signal::TERM)
                    }
                    GuardAction::Kill => {
                        acted = Some(Instant::now());
                        killed = true;
                        target.signal(Signal::KILL)
                    }
                };
                let kind = match args.action {
                    GuardAction::None => "warn",
                    GuardAction::Term => "term",
                    GuardAction::Kill => "kill",
                };
                event(args.json, kind, &trip, &ledger, &pids, &findings);
            }
            (None, None) => warned = false,
            (_, Some(at)) if !killed && at.elapsed() >= grace => {
                let pids = target.signal(Signal::KILL);
                killed = true;
                eprintln!(
                    "gpuledger guard: the job outlived --grace {}; sent SIGKILL to {pids:?}",
                    args.grace
                );
                if let Some(trip) = check(&policy, &ledger, cg.as_ref()) {
                    event(args.json, "kill", &trip, &ledger, &pids, &[]);
                }
            }
            _ => {}
        }
        let wait = if acted.is_some() {
            Duration::from_millis(50)
        } else {
            interval
        };
        std::thread::sleep(wait.saturating_sub(tick.elapsed()));
    }
}
