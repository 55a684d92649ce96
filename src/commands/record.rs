//! `gpuledger record`: run or attach, sample every interval into a recording, summarise.

use crate::cli::RecordArgs;
use anyhow::{bail, Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::outputs::show;
use gpuledger::recording::run::{record, RunOptions, Target};
use gpuledger::timeline::RunSummary;
use gpuledger::units::{human_bytes, parse_duration};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

fn default_output() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    PathBuf::from(format!(
        "gpuledger-{}.ledger",
        t.replace([':', '-'], "").trim_end_matches('Z')
    ))
}

/// Parses --interval, refusing intervals too short to be useful.
pub fn interval(text: &str) -> Result<Duration> {
    let d = parse_duration(text).map_err(anyhow::Error::msg)?;
    if d < Duration::from_millis(10) {
        bail!("--interval {text} is too short; use 10ms or more");
    }
    Ok(d)
}

pub fn run(root: Option<&Path>, args: &RecordArgs, t: &Thresholds) -> Result<ExitCode> {
    let modes = [!args.command.is_empty(), !args.pids.is_empty(), args.all]
        .iter()
        .filter(|m| **m)
        .count();
    if modes != 1 {
        bail!("record needs exactly one of: -- CMD ARGS…, --pid PID…, --all");
    }
    let opts = RunOptions {
        interval: interval(&args.interval)?,
        duration: args
            .duration
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(anyhow::Error::msg)?,
        thresholds: t.clone(),
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
    let end = record(
        super::open_root(root)?,
        &target,
        &output,
        &opts,
        &stop,
        |p| {
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
        },
    )
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
