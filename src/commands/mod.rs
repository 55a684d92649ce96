//! One function per command. They wire library pieces together and print.

mod capture;
mod demo;
mod diff;
mod doctor;
mod experiment;
mod guard;
mod project;
mod record;
mod recordings;
mod report;
mod serve;
mod show;
mod simulate;
mod snapshot;
mod top;

use crate::cli::{Cli, ColorArg, Command};
use anyhow::{Context, Result};
use clap::CommandFactory;
use gpuledger::findings::Thresholds;
use gpuledger::outputs::text_table::Paint;
use gpuledger::root::Root;
use gpuledger::serve::MetricsOptions;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// What every command gets from the global options, built once from the command line.
pub struct Ctx {
    /// `--root`: a capture tree or archive instead of the live machine.
    pub root: Option<PathBuf>,
    /// `--proc`: the host's /proc mounted elsewhere (containers).
    pub proc_dir: Option<PathBuf>,
    /// Finding thresholds with every `--threshold` applied.
    pub thresholds: Thresholds,
    /// Whether text output is coloured (`--color`, NO_COLOR, CLICOLOR_FORCE, a terminal).
    pub paint: Paint,
}

impl Ctx {
    /// Applies the global options; the values were already checked by clap's value parsers.
    fn new(cli: &Cli) -> Result<Ctx> {
        let mut thresholds = Thresholds::default();
        for a in &cli.thresholds {
            thresholds
                .set(a)
                .with_context(|| format!("in --threshold {a}"))?;
        }
        Ok(Ctx {
            root: cli.root.clone(),
            proc_dir: cli.proc_dir.clone(),
            thresholds,
            paint: Paint {
                color: wants_color(cli.color),
                width: text_width(),
            },
        })
    }

    /// Opens `--root` (or the live machine), reading /proc from `--proc` when given.
    pub fn open_root(&self) -> Result<Root> {
        let root = match &self.root {
            None => Root::live(),
            Some(p) => Root::open(p).context("in --root")?,
        };
        let Some(dir) = &self.proc_dir else {
            return Ok(root);
        };
        if !dir.join("self").exists() && !dir.join("1").exists() {
            return Err(UsageError(format!(
                "--proc {}: no procfs there (expected PATH/1 or PATH/self); mount the host's /proc, e.g. -v /proc:/host/proc:ro",
                dir.display()
            ))
            .into());
        }
        Ok(root.with_proc(dir))
    }
}

/// `--color`: always and never are final. auto: NO_COLOR (any non-empty value) disables;
/// CLICOLOR_FORCE (non-empty and not `0`; anstyle-query alone would take `0` as forcing) forces;
/// CLICOLOR=0 disables; else colour when stdout is a terminal whose TERM supports it.
fn wants_color(arg: ColorArg) -> bool {
    match arg {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => {
            let forced =
                std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0");
            if anstyle_query::no_color() {
                false
            } else if forced {
                true
            } else if anstyle_query::clicolor() == Some(false) {
                false
            } else {
                std::io::stdout().is_terminal() && anstyle_query::term_supports_color()
            }
        }
    }
}

/// Columns of text output: on a terminal `COLUMNS`, else the terminal's size; 80 when stdout is
/// not a terminal (a file, a pipe), so saved output is the same wherever it was made.
fn text_width() -> usize {
    let out = std::io::stdout();
    if !out.is_terminal() {
        return gpuledger::outputs::wrap::DEFAULT_WIDTH;
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
        .or_else(|| terminal_size::terminal_size_of(&out).map(|(w, _)| usize::from(w.0)))
        .unwrap_or(gpuledger::outputs::wrap::DEFAULT_WIDTH)
}

/// A value that parsed but cannot be used (conflicts with the machine or other options). `main`
/// exits 2 for it, as clap does for its own usage errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    if let (Some(_), Some(flag)) = (&cli.command, cli.snapshot.given()) {
        return Err(UsageError(format!(
            "{flag} before a command is an option of the snapshot (gpuledger with no command) \
             and means nothing to the command; write a command's own options after its name, \
             e.g. gpuledger show --json FILE"
        ))
        .into());
    }
    let ctx = Ctx::new(&cli)?;
    let t = &ctx.thresholds;
    match cli.command {
        None => snapshot::run(&ctx, &cli.snapshot),
        Some(Command::Capture {
            output,
            pids,
            force,
        }) => capture::run(&ctx, &output, pids, force),
        Some(Command::Demo { keep }) => demo::run(keep.as_deref(), t),
        Some(Command::Simulate(args)) => simulate::run(&args),
        Some(Command::Record(args)) => record::run(&ctx, &args, t),
        Some(Command::Guard(args)) => guard::run(&ctx, &args, t),
        Some(Command::Serve {
            listen,
            interval,
            min_process_bytes,
            max_series,
            show_cmdline,
            filter,
        }) => serve::run(
            &ctx,
            listen,
            interval,
            MetricsOptions {
                min_process_bytes,
                max_process_series: max_series,
            },
            &filter,
            show_cmdline,
        ),
        Some(Command::Report {
            recordings,
            output,
            template,
            redact,
            verbose,
        }) => report::run(
            &ctx,
            &recordings,
            output.as_deref(),
            template,
            redact,
            verbose,
            t,
        ),
        Some(Command::Plot { recordings, output }) => plot(&recordings, &output),
        Some(Command::Top {
            interval,
            sort,
            filter,
        }) => top::run(&ctx, interval, sort.key(), &filter),
        Some(Command::Project {
            ranks,
            from,
            vram_per_rank,
            peers,
            host_mem,
        }) => project::run(&ctx, ranks, from.as_deref(), vram_per_rank, peers, host_mem),
        Some(Command::Experiment {
            controls,
            repeat,
            list_controls,
            output,
            interval,
            command,
        }) => experiment::run(
            ctx.root.as_deref(),
            &controls,
            repeat,
            list_controls,
            output.as_deref(),
            interval,
            &command,
            t,
        ),
        Some(Command::Show {
            files,
            json,
            verbose,
            filter,
        }) => show::run(&ctx, &files, json, verbose, &filter),
        Some(Command::Diff { a, b, json }) => diff::run(&a, &b, json),
        Some(Command::Completions { shell }) => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "gpuledger", &mut out);
            print(&String::from_utf8_lossy(&out))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Man { dir: Some(dir) }) => {
            std::fs::create_dir_all(&dir)
                .and_then(|()| clap_mangen::generate_to(Cli::command(), &dir))
                .with_context(|| format!("cannot write man pages into {}", dir.display()))?;
            eprintln!(
                "wrote the man pages into {} (man -l {}/gpuledger-record.1)",
                dir.display(),
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Man { dir: None }) => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            print(&String::from_utf8_lossy(&out))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Doctor(args)) => doctor::run(&ctx, &args, t),
    }
}

fn plot(files: &[std::path::PathBuf], output: &std::path::Path) -> Result<ExitCode> {
    let runs = files
        .iter()
        .map(|f| recordings::open_run(f, "plot"))
        .collect::<Result<Vec<_>>>()?;
    let (recs, sets): (Vec<_>, Vec<_>) = runs.into_iter().map(|r| ((r.name, r.rec), r.set)).unzip();
    let sets: Vec<_> = sets.iter().map(Option::as_ref).collect();
    let html = gpuledger::outputs::plot::render_html(&recs, &sets);
    std::fs::write(output, html).with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "wrote {} (self-contained: open it in any browser)",
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The filter of `--pid`/`--device`, resolved against a first sample (the pids and devices must
/// exist when a live view starts; later samples show whatever of them is still there).
fn live_filter(
    sampler: &mut gpuledger::sampler::Sampler,
    args: &crate::cli::FilterArgs,
) -> Result<gpuledger::ledger::Filter> {
    if args.pids.is_empty() && args.devices.is_empty() {
        return Ok(gpuledger::ledger::Filter::default());
    }
    let first = gpuledger::ledger::Ledger::from_snapshot(&sampler.sample()?);
    Ok(gpuledger::ledger::Filter::resolve(
        &first,
        &args.pids,
        &args.devices,
    )?)
}

/// Writes to stdout; a closed pipe ends quietly (main treats BrokenPipe as success).
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
