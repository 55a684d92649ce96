//! One module per command: each runs its plan (built once by `cli`) with library pieces, and
//! prints.

mod capture;
mod demo;
mod diff;
mod doctor;
mod experiment;
mod guard;
mod meta;
mod plot;
mod project;
mod record;
mod recordings;
mod report;
mod serve;
mod show;
mod simulate;
mod snapshot;
mod top;

use crate::cli::{Cli, FilterArgs, Globals, Plan, EXIT_FINDING};
use anyhow::Result;
use gpuledger::findings::Severity;
use gpuledger::ledger::{Filter, Ledger};
use gpuledger::sampler::Sampler;
use std::io::Write;
use std::process::ExitCode;

/// Runs the parsed command line: plans it, then runs the plan.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let g = Globals::new(&cli)?;
    match cli.plan(&g)? {
        Plan::Snapshot(p) => snapshot::run(&g, p),
        Plan::Capture(p) => capture::run(&g, p),
        Plan::Demo(keep) => demo::run(keep.as_deref(), &g.thresholds, g.paint),
        Plan::Simulate(p) => simulate::run(p),
        Plan::Record(p) => record::run(&g, p),
        Plan::Guard(p) => guard::run(&g, &p),
        Plan::Serve(p) => serve::run(&g, p),
        Plan::Report(p) => report::run(&g, p),
        Plan::Plot(p) => plot::run(p),
        Plan::Top(p) => top::run(&g, p),
        Plan::Project(p) => project::run(&g, p),
        Plan::Experiment(p) => experiment::run(&g, p),
        Plan::Show(p) => show::run(&g, p),
        Plan::Diff(p) => diff::run(p, g.paint.width),
        Plan::Doctor(p) => doctor::run(&g, p),
        Plan::Completions(shell) => meta::completions(shell),
        Plan::Man(dir) => meta::man(dir.as_deref()),
    }
}

/// The filter of `--pid`/`--device`, resolved against a first sample (the pids and devices must
/// exist when a live view starts; later samples show whatever of them is still there).
fn live_filter(sampler: &mut Sampler, args: &FilterArgs) -> Result<Filter> {
    if !args.is_set() {
        return Ok(Filter::default());
    }
    let first = Ledger::from_snapshot(sampler.sample()?);
    Ok(Filter::resolve(&first, &args.pids, &args.devices)?)
}

/// 3 when `--fail-on` is given and the worst severity shown reaches it.
fn fail_on(worst: Option<Severity>, limit: Option<Severity>) -> ExitCode {
    match limit {
        Some(l) if worst.is_some_and(|w| w >= l) => ExitCode::from(EXIT_FINDING),
        _ => ExitCode::SUCCESS,
    }
}

/// Writes to stdout; a closed pipe ends quietly (main treats BrokenPipe as success).
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
