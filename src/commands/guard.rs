//! `gpuledger guard`: runs the library's guard ([`gpuledger::guard::run`]) and prints what it
//! reports: lines on stderr, and with `--json` one event line per warning or action on stdout.

use crate::cli::{GuardRun, UsageError};
use anyhow::Result;
use gpuledger::guard::job_host_gpu;
use gpuledger::guard::machine::Response;
use gpuledger::guard::run::{guard, Event, GuardError};
use gpuledger::guard::Trip;
use gpuledger::ledger::{Ledger, MemClass, UsageSource};
use gpuledger::outputs::json::rfc3339;
use gpuledger::units::human_bytes;
use serde_json::json;
use std::process::ExitCode;

/// The schema of `--json` event lines.
const EVENT_SCHEMA: &str = "gpuledger.guard-event/1";

/// An error with its causes, joined as anyhow's `{:#}` joins them.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// Runs `guard`.
pub fn run(g: &crate::cli::Globals, run: &GuardRun) -> Result<ExitCode> {
    let grace = run.plan.grace;
    let code = guard(g.open_root()?, &run.plan, |e| print(&e, run.json, grace));
    match code {
        Ok(code) => Ok(ExitCode::from(code)),
        // The floor conflicts with the machine: a usage error, as clap's own.
        Err(e @ GuardError::FloorAboveTotal { .. }) => Err(UsageError(e.to_string()).into()),
        Err(e) => Err(e.into()),
    }
}

/// Prints one event.
fn print(e: &Event<'_>, json_out: bool, grace: std::time::Duration) {
    match e {
        Event::Watching {
            pids,
            interval,
            response,
            policy,
        } => {
            let action = match response {
                Response::Warn => "warns (--action none)".to_string(),
                Response::Term => format!(
                    "stops the job (SIGTERM, SIGKILL {} s later)",
                    grace.as_secs_f64()
                ),
                Response::Kill => "kills the job (SIGKILL)".to_string(),
            };
            let mut who: Vec<String> = pids.iter().take(8).map(u32::to_string).collect();
            if pids.len() > 8 {
                who.push(format!("+{} more", pids.len() - 8));
            }
            eprintln!(
                "gpuledger guard: watching pid {} every {} s; {action} at: {}",
                who.join(", "),
                interval.as_secs_f64(),
                policy.describe()
            );
        }
        Event::NoSubreaper(err) => eprintln!(
            "gpuledger guard: warning: cannot become the job's subreaper ({err}); a process \
             of the job whose parent exits and that leaves its cgroup or group is not followed"
        ),
        Event::Uncontained(err) => eprintln!(
            "gpuledger guard: warning: containment is by process group only, plus the \
             job's descendants found at each sample: {}. Give guard a writable cgroup \
             v2 (run it as root, or under `systemd-run --user --scope -p Delegate=yes`).",
            chain(*err)
        ),
        Event::Untraced(why) => eprintln!(
            "gpuledger guard: API tracing off: {why}; memory the job registers in place \
             (cudaHostRegister) is not counted"
        ),
        Event::LevelZeroUntraced(why) => {
            eprintln!("gpuledger guard: Level Zero tracing off: {why}")
        }
        Event::TraceLosses { losses, ending } => eprintln!(
            "gpuledger guard: {}{} traced events lost on the way (not counted toward the limits), \
             {} sent by processes outside the job (refused)",
            if *ending { "in all, " } else { "" },
            losses.lost,
            losses.foreign
        ),
        Event::LeftCgroup(esc) => {
            eprintln!(
                "gpuledger guard: process {} of the job left its cgroup (now in {}); it is still \
                 the job's: guard watches it and signals it with the rest",
                esc.pid,
                esc.cgroup.as_deref().unwrap_or("an unknown cgroup")
            );
            if json_out {
                println!(
                    "{}",
                    json!({"schema": EVENT_SCHEMA, "event": "left_cgroup", "pid": esc.pid, "cgroup": esc.cgroup})
                );
            }
        }
        Event::Tripped {
            response,
            trip,
            ledger,
            findings,
            pids,
        } => {
            let (verb, kind) = match response {
                Response::Warn => ("warning only (--action none)", "warn"),
                Response::Term => ("sending SIGTERM to the job", "term"),
                Response::Kill => ("sending SIGKILL to the job", "kill"),
            };
            eprintln!("gpuledger guard: {}; {verb}", trip.describe());
            for h in holders(ledger) {
                eprintln!("  {h}");
            }
            let findings: Vec<String> = findings
                .iter()
                .map(|f| format!("{}: {}", f.kind.as_str(), f.message))
                .collect();
            for f in &findings {
                eprintln!("  {f}");
            }
            event(json_out, kind, trip, ledger, pids, &findings);
        }
        Event::KilledAfterGrace { trip, pids } => {
            eprintln!(
                "gpuledger guard: the job outlived --grace {grace:?}; sent SIGKILL to {pids:?}"
            );
            if let Some((trip, ledger)) = trip {
                event(json_out, "kill", trip, ledger, pids, &[]);
            }
        }
        Event::TermLeftovers { left } => eprintln!(
            "gpuledger guard: the job's main process ended; stopping the {left} process(es) \
             it left behind (SIGTERM, SIGKILL after --grace)"
        ),
        Event::KilledLeftovers { pids } => eprintln!(
            "gpuledger guard: the job outlived --grace {grace:?}; killed its cgroup ({pids:?})"
        ),
        Event::Survivors { pids } => eprintln!(
            "gpuledger guard: warning: {} process(es) of the job are still running as guard \
             exits: {pids:?}",
            pids.len()
        ),
        Event::Relayed { signal, pids } => {
            let name = signal_name(*signal);
            eprintln!(
                "gpuledger guard: received {name}; passed it to the job's {} process(es): \
                 {pids:?}",
                pids.len()
            );
            if json_out {
                println!(
                    "{}",
                    json!({"schema": EVENT_SCHEMA, "event": "relayed", "signal": name, "pids": pids})
                );
            }
        }
        Event::HandedOff { via, pids } => {
            let via = via.join(", ");
            eprintln!(
                "gpuledger guard: warning: a {via} server that was already running (it is not \
                 the job's) started {} process(es) while the job ran, which guard did not stop: \
                 {pids:?}; if the job asked for them (`tmux new-session -d …` reaches a running \
                 server), stop them yourself, and give the job a server of its own (`tmux -L \
                 NAME …` inside the job) so that guard can",
                pids.len()
            );
            if json_out {
                println!(
                    "{}",
                    json!({"schema": EVENT_SCHEMA, "event": "handed_off", "via": via, "pids": pids})
                );
            }
        }
    }
}

/// One line per process and device: what it holds on the device and in host RAM, and how much
/// of the latter only its traced calls show (registered in place).
fn holders(ledger: &Ledger) -> Vec<String> {
    ledger
        .processes
        .iter()
        .flat_map(|p| p.devices().into_iter().map(move |d| (p, d)))
        .map(|(p, d)| {
            let c = |class| human_bytes(p.resident(d, class));
            let traced: u64 = p
                .usage
                .iter()
                .filter(|u| u.device == d && u.source == UsageSource::ApiTrace)
                .filter_map(|u| u.resident)
                .sum();
            let registered = match traced {
                0 => String::new(),
                b => format!(
                    " ({} of it registered in place: traced calls)",
                    human_bytes(b)
                ),
            };
            format!(
                "{} on {d}: {} device-local, {} host-class{registered}",
                p.label(),
                c(MemClass::Device),
                c(MemClass::Host)
            )
        })
        .collect()
}

/// The `--json` event line of an action.
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
            "schema": EVENT_SCHEMA,
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

/// The signal's name as `kill -l` spells it, with the SIG prefix.
fn signal_name(signal: rustix::process::Signal) -> String {
    use rustix::process::Signal as S;
    let name = match signal {
        S::TERM => "SIGTERM",
        S::INT => "SIGINT",
        S::HUP => "SIGHUP",
        S::QUIT => "SIGQUIT",
        S::USR1 => "SIGUSR1",
        S::USR2 => "SIGUSR2",
        S::KILL => "SIGKILL",
        other => return format!("signal {}", other.as_raw()),
    };
    name.to_string()
}
