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

use crate::cli::{Cli, Command, FilterArgs, Globals, EXIT_FINDING};
use anyhow::Result;
use gpuledger::findings::Severity;
use gpuledger::ledger::{Filter, Ledger};
use gpuledger::sampler::Sampler;
use std::io::Write;
use std::process::ExitCode;

/// Runs the parsed command line: plans it, then runs the plan.
pub fn run(cli: Cli) -> Result<ExitCode> {
    cli.refuse_misplaced()?;
    let g = Globals::new(&cli)?;
    let Some(command) = &cli.command else {
        return snapshot::run(&g, cli.snapshot.plan(&g)?);
    };
    match command {
        Command::Capture(a) => capture::run(&g, a.plan(&g)?),
        Command::Demo(a) => demo::run(a.plan(&g)?.as_deref(), &g.thresholds),
        Command::Simulate(a) => simulate::run(a.plan(&g)?),
        Command::Record(a) => record::run(&g, a.plan(&g)?),
        Command::Guard(a) => guard::run(&g, &a.plan(&g)?),
        Command::Serve(a) => serve::run(&g, a.plan(&g)?),
        Command::Report(a) => report::run(&g, a.plan(&g)?),
        Command::Plot(a) => plot::run(a.plan(&g)?),
        Command::Top(a) => top::run(&g, a.plan(&g)?),
        Command::Project(a) => project::run(&g, a.plan(&g)?),
        Command::Experiment(a) => experiment::run(&g, a.plan(&g)?),
        Command::Show(a) => show::run(&g, a.plan(&g)?),
        Command::Diff(a) => diff::run(a.plan(&g)?),
        Command::Doctor(a) => doctor::run(&g, a.plan(&g)?),
        Command::Completions(a) => meta::completions(a.shell),
        Command::Man(a) => meta::man(a.dir.as_deref()),
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
