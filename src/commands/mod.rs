//! One function per command. They wire library pieces together and print.

mod capture;
mod demo;
mod diff;
mod doctor;
mod experiment;
mod guard;
mod project;
mod record;
mod report;
mod serve;
mod show;
mod simulate;
mod snapshot;

use crate::cli::{Cli, Command};
use anyhow::{Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::root::Root;
use std::io::Write;
use std::process::ExitCode;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let thresholds = thresholds(&cli.thresholds)?;
    let _ = PROC_DIR.set(cli.proc_dir.clone());
    match cli.command {
        None => snapshot::run(cli.root.as_deref(), &cli.snapshot, &thresholds),
        Some(Command::Capture { output, pids }) => capture::run(cli.root.as_deref(), &output, pids),
        Some(Command::Demo { keep }) => demo::run(keep.as_deref(), &thresholds),
        Some(Command::Simulate(args)) => simulate::run(&args),
        Some(Command::Record(args)) => record::run(cli.root.as_deref(), &args, &thresholds),
        Some(Command::Guard(args)) => guard::run(cli.root.as_deref(), &args, &thresholds),
        Some(Command::Serve {
            listen,
            interval,
            min_process_bytes,
            max_series,
        }) => serve::run(
            cli.root.as_deref(),
            listen,
            &interval,
            &min_process_bytes,
            max_series,
            thresholds,
        ),
        Some(Command::Report {
            recordings,
            output,
            template,
            redact,
        }) => report::run(
            cli.root.as_deref(),
            &recordings,
            output.as_deref(),
            template,
            redact,
            &thresholds,
        ),
        Some(Command::Plot { recordings, output }) => plot(&recordings, &output),
        Some(Command::Top { interval }) => {
            let interval =
                gpuledger::units::parse_duration(&interval).map_err(anyhow::Error::msg)?;
            let sampler = gpuledger::sampler::Sampler::new(
                open_root(cli.root.as_deref())?,
                gpuledger::sampler::Scope::All,
                Default::default(),
            );
            gpuledger::outputs::top::run(sampler, interval, &thresholds).context("top")?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Project {
            ranks,
            from,
            vram_per_rank,
            peers,
            host_mem,
        }) => project::run(
            cli.root.as_deref(),
            ranks,
            from.as_deref(),
            vram_per_rank.as_deref(),
            peers,
            host_mem.as_deref(),
        ),
        Some(Command::Experiment {
            controls,
            repeat,
            list_controls,
            output,
            interval,
            command,
        }) => experiment::run(
            cli.root.as_deref(),
            &controls,
            repeat,
            list_controls,
            output.as_deref(),
            &interval,
            &command,
            &thresholds,
        ),
        Some(Command::Show { file, json }) => show::run(&file, json),
        Some(Command::Diff { a, b, json }) => diff::run(&a, &b, json),
        Some(Command::Doctor(args)) => doctor::run(cli.root.as_deref(), &args, &thresholds),
    }
}

fn plot(files: &[std::path::PathBuf], output: &std::path::Path) -> Result<ExitCode> {
    let recs = files
        .iter()
        .map(|f| {
            Ok((
                f.display().to_string(),
                gpuledger::recording::open(f).context("plot")?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let html = gpuledger::outputs::plot::render_html(&recs);
    std::fs::write(output, html).with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "wrote {} (self-contained: open it in any browser)",
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn thresholds(assignments: &[String]) -> Result<Thresholds> {
    let mut t = Thresholds::default();
    for a in assignments {
        t.set(a).with_context(|| format!("in --threshold {a}"))?;
    }
    Ok(t)
}

/// Opens `--root`, or the live machine.
pub fn open_root(path: Option<&std::path::Path>) -> Result<Root> {
    let root = match path {
        None => Root::live(),
        Some(p) => Root::open(p).context("in --root")?,
    };
    Ok(match PROC_DIR.get().and_then(|p| p.as_deref()) {
        Some(dir) => {
            if !dir.join("self").exists() && !dir.join("1").exists() {
                anyhow::bail!("--proc {}: no procfs there (expected PATH/1 or PATH/self); mount the host's /proc, e.g. -v /proc:/host/proc:ro", dir.display());
            }
            root.with_proc(dir)
        }
        None => root,
    })
}

/// `--proc`, set once from the command line.
static PROC_DIR: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();

/// Writes to stdout; a closed pipe ends quietly (main treats BrokenPipe as success).
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
