//! The default command: one snapshot (or one every `--loop` interval), as tables, JSON or CSV.

use super::Ctx;
use crate::cli::{FailOn, Format, SnapshotArgs};
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

/// Exit status when --fail-on matched.
const EXIT_FINDING: u8 = 3;

/// How often a `--loop` wait looks at the stop flag: Ctrl-C ends a 10 s wait within this.
const STOP_POLL: Duration = Duration::from_millis(20);

pub fn run(ctx: &Ctx, args: &SnapshotArgs) -> Result<ExitCode> {
    // clap's possible values for --explain are `findings::EXPLAINED`, each with a text.
    if let Some(text) = args.explain.as_deref().and_then(findings::explain) {
        super::print(text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let format = if args.json { Format::Json } else { args.format };
    let stop = Arc::new(AtomicBool::new(false));
    if args.loop_interval.is_some() {
        // Ctrl-C and SIGTERM end the loop between snapshots, so the last one is printed whole.
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, stop.clone()).context("cannot handle signals")?;
        }
    }
    let mut sampler = Sampler::new(ctx.open_root()?, Scope::All, SamplerOptions::default());
    let base = Base::embedded().context("the embedded known-issues base")?;
    let mut observer = Observer::new(ctx.thresholds.clone())
        .kernel_log(KernelLog::Fresh)
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
        let mut ledger = filter.ledger(&whole);
        args.sort.key().sort(&mut ledger.processes);
        let shown = filter.findings(&found);
        worst = worst.max(findings::worst(&shown));
        super::print(&render(ctx, args, format, &ledger, &shown, printed == 0)?)?;
        printed += 1;
        let Some(every) = args.loop_interval else {
            break;
        };
        if args.count.is_some_and(|n| printed >= n) || !wait(started + every, &stop) {
            break;
        }
    }
    let limit = match args.fail_on {
        None => return Ok(ExitCode::SUCCESS),
        Some(FailOn::Warning) => Severity::Warning,
        Some(FailOn::Critical) => Severity::Critical,
    };
    Ok(if worst.is_some_and(|w| w >= limit) {
        ExitCode::from(EXIT_FINDING)
    } else {
        ExitCode::SUCCESS
    })
}

/// One snapshot in `format`; `first` says whether it opens the output (CSV's header row).
fn render(
    ctx: &Ctx,
    args: &SnapshotArgs,
    format: Format,
    ledger: &Ledger,
    shown: &[Finding],
    first: bool,
) -> Result<String> {
    let looping = args.loop_interval.is_some();
    Ok(match format {
        Format::Json if looping => json::render_line(ledger, shown),
        Format::Json => json::render(ledger, shown),
        Format::Csv => csv::render(ledger, first)?,
        Format::Table => {
            let body = table::render_snapshot_detail(ledger, shown, ctx.paint, args.verbose);
            if looping {
                let stamp = format!("──── {} ────", rfc3339(ledger.time_ms));
                let gap = if first { "" } else { "\n" };
                format!("{gap}{}\n{body}", ctx.paint.heading(&stamp))
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
