//! `gpuledger record`: run or attach, sample every interval into a recording, summarise.

use crate::cli::RecordArgs;
use anyhow::{bail, Context, Result};
use gpuledger::findings::{Finding, Thresholds};
use gpuledger::job::{Job, JobEnd};
use gpuledger::ledger::{Ledger, MemClass};
use gpuledger::outputs::show;
use gpuledger::recording::session::step;
use gpuledger::recording::{self, Recorder, RecordingMeta};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sources::meminfo::read_version;
use gpuledger::timeline;
use gpuledger::units::{human_bytes, parse_duration};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn default_output() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    PathBuf::from(format!(
        "gpuledger-{}.ledger",
        t.replace([':', '-'], "").trim_end_matches('Z')
    ))
}

#[derive(Default)]
struct Progress {
    peak_host: u64,
    peak_local: u64,
    findings: usize,
}

impl Progress {
    fn update(&mut self, l: &Ledger, f: &[Finding]) {
        let sum = |c| {
            l.processes
                .iter()
                .flat_map(|p| p.usage.iter())
                .filter(|u| u.class == c)
                .filter_map(|u| u.resident)
                .sum::<u64>()
        };
        self.peak_host = self.peak_host.max(sum(MemClass::Host));
        self.peak_local = self.peak_local.max(sum(MemClass::Device));
        self.findings = self.findings.max(f.len());
    }
}

pub fn run(root: Option<&Path>, args: &RecordArgs, t: &Thresholds) -> Result<ExitCode> {
    let interval = parse_duration(&args.interval).map_err(anyhow::Error::msg)?;
    if interval < Duration::from_millis(10) {
        bail!(
            "--interval {} is too short; use 10ms or more",
            args.interval
        );
    }
    let limit = args
        .duration
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let modes = [!args.command.is_empty(), !args.pids.is_empty(), args.all]
        .iter()
        .filter(|m| **m)
        .count();
    if modes != 1 {
        bail!("record needs exactly one of: -- CMD ARGS…, --pid PID…, --all");
    }
    let root = super::open_root(root)?;
    let output = args.output.clone().unwrap_or_else(default_output);
    let kernel = read_version(&root).ok();
    let mut job = if args.command.is_empty() {
        None
    } else {
        Some(Job::spawn(&args.command).context("record")?)
    };
    let scope = match (&job, root.is_live()) {
        (Some(j), true) => Scope::Tree([j.pid()].into()),
        (None, _) if !args.pids.is_empty() => Scope::Tree(args.pids.iter().copied().collect()),
        _ => Scope::All,
    };
    let stop = Arc::new(AtomicBool::new(false));
    if job.is_none() {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, stop.clone())?;
        }
    }
    let command = if args.command.is_empty() {
        if args.all {
            vec!["--all".to_string()]
        } else {
            args.pids.iter().map(|p| format!("--pid {p}")).collect()
        }
    } else {
        args.command.clone()
    };
    let meta = RecordingMeta {
        command,
        root: root.label().to_string(),
        interval_ms: interval.as_millis() as u64,
        started_ms: now_ms(),
        kernel,
    };
    let mut recorder = Recorder::create(&output, &meta).context("record")?;
    let mut sampler = Sampler::new(root, scope, SamplerOptions::default());
    let tty = std::io::stderr().is_terminal();
    let start = Instant::now();
    let mut progress = Progress::default();
    let mut write_failed = false;
    let end: Option<JobEnd> = loop {
        let tick = Instant::now();
        let ended = match job.as_mut() {
            Some(j) => j.try_wait()?,
            None => None,
        };
        if !write_failed {
            match step(&mut sampler, &mut recorder, t, None) {
                Ok((ledger, found)) => progress.update(&ledger, &found),
                Err(e) => {
                    eprintln!(
                        "\ngpuledger: recording stopped, {} is intact up to the last sample: {e}",
                        output.display()
                    );
                    write_failed = true;
                }
            }
        }
        if tty {
            eprint!(
                "\r[{:>6.1} s] {} samples  peak host-class {}  device-local {}  findings {}   ",
                start.elapsed().as_secs_f64(),
                recorder.samples(),
                human_bytes(progress.peak_host),
                human_bytes(progress.peak_local),
                progress.findings
            );
            let _ = std::io::stderr().flush();
        }
        if let Some(e) = ended {
            break Some(e);
        }
        let timed_out = job.is_none() && limit.is_some_and(|l| start.elapsed() >= l);
        if stop.load(Ordering::SeqCst) || timed_out {
            break None;
        }
        if write_failed {
            if let Some(j) = job.as_mut() {
                break Some(j.wait()?);
            }
            break None;
        }
        std::thread::sleep(interval.saturating_sub(tick.elapsed()));
    };
    if tty {
        eprintln!();
    }
    if !write_failed {
        recorder
            .finish(
                now_ms(),
                end.and_then(|e| e.code),
                end.and_then(|e| e.signal),
            )
            .context("record")?;
    }
    drop(recorder);
    if let Ok(rec) = recording::open(&output) {
        let found = timeline::analyze(&rec);
        eprint!(
            "{}",
            show::render_text(&output.display().to_string(), &rec, &found)
        );
    }
    Ok(match end {
        Some(e) => ExitCode::from(e.exit_code()),
        None => ExitCode::SUCCESS,
    })
}
