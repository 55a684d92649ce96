//! The default command: one snapshot (or one every `--loop` interval), as tables, JSON or CSV.

use crate::cli::{Format, Globals, ShowSnapshot, SnapshotPlan};
use anyhow::{Context, Result};
use gpuledger::findings::{self, Finding, Severity};
use gpuledger::knowledge::Base;
use gpuledger::ledger::{Filter, Ledger};
use gpuledger::observe::{KernelLog, Observation, Observer};
use gpuledger::outputs::json::rfc3339;
use gpuledger::outputs::{csv, json, table};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a `--loop` wait looks at the stop flag: Ctrl-C ends a 10 s wait within this.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Runs the snapshot plan.
pub fn run(g: &Globals, plan: SnapshotPlan) -> Result<ExitCode> {
    let args = match plan {
        SnapshotPlan::Explain(text) => {
            super::print(&gpuledger::outputs::wrap::fit(text, g.paint.width))?;
            return Ok(ExitCode::SUCCESS);
        }
        SnapshotPlan::Show(show) => show,
    };
    let stop = Arc::new(AtomicBool::new(false));
    if args.every.is_some() {
        // Ctrl-C and SIGTERM end the loop between snapshots, so the last one is printed whole.
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, stop.clone()).context("cannot handle signals")?;
        }
    }
    let mut sampler = Sampler::new(g.open_root()?, Scope::All, SamplerOptions::default());
    let base = Base::installed(None)
        .context("the known-issues base (built-in and /etc/gpuledger/known-issues.d)")?;
    let mut observer = Observer::new(g.thresholds.clone())
        .kernel_log(KernelLog::Fresh)
        .window(args.since, gpuledger::clock::system())
        .known_issues(base);
    let mut filter: Option<Filter> = None;
    let mut worst: Option<Severity> = None;
    let mut printed = 0u64;
    loop {
        let started = Instant::now();
        // Findings first, on the whole machine; the filter only chooses what is shown.
        let Observation {
            ledger: whole,
            findings: found,
        } = observer.sample(&mut sampler)?;
        let filter = match &filter {
            Some(f) => f,
            None => filter.insert(Filter::resolve(
                &whole,
                &args.filter.pids,
                &args.filter.devices,
            )?),
        };
        let mut ledger = filter.ledger(whole);
        args.sort.sort(&mut ledger.processes);
        let shown = filter.findings(&found);
        worst = worst.max(findings::worst(&shown));
        super::print(&render(g, &args, &ledger, &shown, printed == 0)?)?;
        printed += 1;
        let Some(every) = args.every else {
            break;
        };
        if args.count.is_some_and(|n| printed >= n) || !wait(started + every, &stop) {
            break;
        }
    }
    Ok(super::fail_on(worst, args.fail_on))
}

/// One snapshot in `format`; `first` says whether it opens the output (CSV's header row).
fn render(
    g: &Globals,
    args: &ShowSnapshot,
    ledger: &Ledger,
    shown: &[Finding],
    first: bool,
) -> Result<String> {
    let looping = args.every.is_some();
    Ok(match args.format {
        Format::Json if looping => json::render_line(ledger, shown),
        Format::Json => json::render(ledger, shown),
        Format::Csv => csv::render(ledger, first)?,
        Format::Table => {
            let body = table::render_snapshot_detail(ledger, shown, g.paint, args.verbose);
            if looping {
                let stamp = format!("──── {} ────", rfc3339(ledger.time_ms));
                let gap = if first { "" } else { "\n" };
                format!("{gap}{}\n{body}", g.paint.heading(&stamp))
            } else {
                body
            }
        }
    })
}

/// Sleeps until the next snapshot is due; false when a signal asked to stop first.
fn wait(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(STOP_POLL));
    }
}
