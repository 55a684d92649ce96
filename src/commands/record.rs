//! `gpuledger record`: run or attach, sample every interval into a recording, summarise.

use crate::cli::RecordArgs;
use anyhow::{Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::outputs::show;
use gpuledger::recording::run::{record, RunOptions, Target};
use gpuledger::timeline::RunSummary;
use gpuledger::units::human_bytes;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

fn default_output() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    PathBuf::from(format!(
        "gpuledger-{}.ledger",
        t.replace([':', '-'], "").trim_end_matches('Z')
    ))
}

/// Runs `record`; clap has checked the interval and that exactly one target is given.
pub fn run(ctx: &super::Ctx, args: &RecordArgs, t: &Thresholds) -> Result<ExitCode> {
    let opts = RunOptions {
        interval: args.interval,
        duration: args.duration,
        thresholds: t.clone(),
        rates: args.rates.clone(),
    };
    let target = if !args.command.is_empty() {
        Target::Command {
            argv: args.command.clone(),
            env: Vec::new(),
        }
    } else if !args.pids.is_empty() {
        Target::Pids(args.pids.clone())
    } else {
        Target::All
    };
    let stop = Arc::new(AtomicBool::new(false));
    if !matches!(target, Target::Command { .. }) {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, stop.clone())?;
        }
    }
    let output = args.output.clone().unwrap_or_else(default_output);
    let tty = std::io::stderr().is_terminal();
    let end = record(ctx.open_root()?, &target, &output, &opts, &stop, |p| {
        if tty {
            eprint!(
                "\r[{:>6.1} s] {} samples  peak host-class {}  device-local {}  findings {}   ",
                p.elapsed.as_secs_f64(),
                p.samples,
                human_bytes(p.peak_host),
                human_bytes(p.peak_local),
                p.findings
            );
            let _ = std::io::stderr().flush();
        }
    })
    .context("record")?;
    if tty {
        eprintln!();
    }
    if let Some(e) = &end.write_error {
        eprintln!(
            "gpuledger: recording stopped, {} is intact up to the last sample: {e}",
            output.display()
        );
    }
    if let Ok(rec) = gpuledger::recording::open(&output) {
        eprint!(
            "{}",
            show::render_text(&output.display().to_string(), &RunSummary::of(&rec))
        );
    }
    Ok(match end.job {
        Some(e) => ExitCode::from(e.exit_code()),
        None => ExitCode::SUCCESS,
    })
}
