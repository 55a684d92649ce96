//! Command-line definition (clap derive) and plans. Every value is parsed and range-checked in
//! clap value parsers ([`parse`]), so a bad value is a usage error (exit 2) before any work;
//! each command's `XArgs::plan` then checks combinations and builds the typed plan once, and
//! `commands` runs it and prints.

mod capture;
mod demo;
mod doctor;
mod experiment;
mod globals;
mod guard;
mod meta;
mod parse;
mod plot;
mod project;
mod record;
mod report;
mod serve;
mod shared;
mod show;
mod snapshot;
mod top;

pub use capture::{CaptureArgs, CapturePlan};
pub use demo::{DemoArgs, SimulateArgs, SimulatePlan};
pub use doctor::{DoctorArgs, DoctorPlan};
pub use experiment::{ExperimentArgs, ExperimentPlan, ExperimentRun};
pub use globals::Globals;
pub use guard::{GuardArgs, GuardRun};
pub use meta::{CompletionsArgs, ManArgs};
pub use plot::{PlotArgs, PlotPlan};
pub use project::{Basis, ProjectArgs, ProjectPlan};
pub use record::{RecordArgs, RecordPlan, RecordTarget};
pub use report::{ReportArgs, ReportPlan};
pub use serve::{ServeArgs, ServePlan};
pub use shared::{
    recordings_exist, FilterArgs, Format, FormatArgs, OutputArgs, OutputExists, TraceArgs,
    EXIT_FINDING,
};
pub use show::{DiffArgs, DiffPlan, ShowArgs, ShowPlan};
pub use snapshot::{ShowSnapshot, SnapshotArgs, SnapshotPlan};
pub use top::{TopArgs, TopPlan};

use crate::help_text;
use clap::{Arg, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The heading of the options every command takes.
const GLOBAL: &str = "Global options";

/// A value that parsed but cannot be used (conflicts with the machine or other options). `main`
/// exits 2 for it, as clap does for its own usage errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Shows, proves and prevents GPU-driver memory blowups.
///
/// With no command, prints a snapshot of this machine: host memory (with GPUActive or the
/// unaccounted residual), DRM devices, GPU memory per process × device split into device-local
/// (VRAM) and host-class (GTT/system) bytes, and findings such as the peer-mirror pattern.
#[derive(Debug, Parser)]
#[command(
    name = "gpuledger",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_help = help_text::SNAPSHOT,
    mut_arg("fail_on", |a: Arg| a.help(
        "Exit with status 3 when a finding of this severity or worse exists (among those shown, \
         with --pid/--device; in any snapshot, with --loop)"
    ))
)]
pub struct Cli {
    /// Read a capture tree or a capture archive (.tar.zst) instead of the live machine.
    #[arg(long, global = true, value_name = "DIR|FILE", help_heading = GLOBAL)]
    pub root: Option<PathBuf>,

    /// Read /proc from PATH (the host's /proc mounted inside a container, e.g. /host/proc).
    #[arg(long = "proc", global = true, value_name = "PATH", help_heading = GLOBAL)]
    pub proc_dir: Option<PathBuf>,

    /// Set a finding threshold, e.g. --threshold peer.min_bytes=512MiB (see --explain).
    #[arg(
        long = "threshold",
        global = true,
        value_name = "NAME=VALUE",
        value_parser = parse::threshold,
        help_heading = GLOBAL
    )]
    pub thresholds: Vec<String>,

    /// Colour severities in text output: auto = when stdout is a terminal, unless NO_COLOR is
    /// set (non-empty); CLICOLOR_FORCE (non-empty, not 0) forces it. always/never override both.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN",
        help_heading = GLOBAL
    )]
    pub color: ColorArg,

    #[command(flatten)]
    pub snapshot: SnapshotArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// A checked command line: what to run, typed, built once from the flags.
#[derive(Debug)]
pub enum Plan {
    /// The snapshot (no command).
    Snapshot(SnapshotPlan),
    /// `capture`.
    Capture(CapturePlan),
    /// `demo`, keeping its files where given.
    Demo(Option<PathBuf>),
    /// `simulate`.
    Simulate(SimulatePlan),
    /// `record`.
    Record(RecordPlan),
    /// `guard`.
    Guard(GuardRun),
    /// `serve`.
    Serve(ServePlan),
    /// `report`.
    Report(ReportPlan),
    /// `plot`.
    Plot(PlotPlan),
    /// `top`.
    Top(TopPlan),
    /// `project`.
    Project(ProjectPlan),
    /// `experiment`.
    Experiment(ExperimentPlan),
    /// `show`.
    Show(ShowPlan),
    /// `diff`.
    Diff(DiffPlan),
    /// `doctor`.
    Doctor(DoctorPlan),
    /// `completions`.
    Completions(clap_complete::Shell),
    /// `man`, into a directory when given.
    Man(Option<PathBuf>),
}

impl Cli {
    /// The plan of the command line: every combination checked, each refusal naming its fix.
    pub fn plan(&self, g: &Globals) -> anyhow::Result<Plan> {
        self.refuse_misplaced()?;
        let Some(command) = &self.command else {
            return Ok(Plan::Snapshot(self.snapshot.plan(g)?));
        };
        Ok(match command {
            Command::Capture(a) => Plan::Capture(a.plan(g)?),
            Command::Demo(a) => Plan::Demo(a.plan(g)?),
            Command::Simulate(a) => Plan::Simulate(a.plan(g)?),
            Command::Record(a) => Plan::Record(a.plan(g)?),
            Command::Guard(a) => Plan::Guard(a.plan(g)?),
            Command::Serve(a) => Plan::Serve(a.plan(g)?),
            Command::Report(a) => Plan::Report(a.plan(g)?),
            Command::Plot(a) => Plan::Plot(a.plan(g)?),
            Command::Top(a) => Plan::Top(a.plan(g)?),
            Command::Project(a) => Plan::Project(a.plan(g)?),
            Command::Experiment(a) => Plan::Experiment(a.plan(g)?),
            Command::Show(a) => Plan::Show(a.plan(g)?),
            Command::Diff(a) => Plan::Diff(a.plan(g)?),
            Command::Doctor(a) => Plan::Doctor(a.plan(g)?),
            Command::Completions(a) => Plan::Completions(a.shell),
            Command::Man(a) => Plan::Man(a.dir.clone()),
        })
    }

    /// Refuses a snapshot option written before a command, where it would mean nothing.
    pub fn refuse_misplaced(&self) -> Result<(), UsageError> {
        match (&self.command, self.snapshot.given()) {
            (Some(_), Some(flag)) => Err(UsageError(format!(
                "{flag} before a command is an option of the snapshot (gpuledger with no command) \
                 and means nothing to the command; write a command's own options after its name, \
                 e.g. gpuledger show --json FILE"
            ))),
            _ => Ok(()),
        }
    }
}

/// When to colour text output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// When stdout is a terminal and NO_COLOR is unset (or CLICOLOR_FORCE is set).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the seed scenario twice in the simulator (peer registrations pinned, as with
    /// EnableDeferBacking=1, and registered only, as with EnableDeferBacking=0), record both,
    /// and show the bad run's snapshot, its timeline findings and the diff. Needs no GPU.
    #[command(after_help = help_text::DEMO)]
    Demo(DemoArgs),
    /// Write a capture tree of a simulated machine (for what-if questions and tests).
    #[command(
        after_help = help_text::SIMULATE,
        mut_arg("output", |a: Arg| a
            .required(true)
            .alias("out")
            .value_name("DIR")
            .help("Directory to write the capture tree into")),
        mut_arg("force", |a: Arg| a
            .help("Replace what a non-empty -o directory holds (otherwise it is refused)"))
    )]
    Simulate(SimulateArgs),
    /// Run a command (or attach to pids) and record its GPU and host memory over time.
    #[command(
        after_help = help_text::RECORD,
        override_usage = help_text::RECORD_USAGE,
        mut_arg("output", |a: Arg| a
            .help("Output recording (SQLite); default gpuledger-<UTC time>-<pid>.ledger here")),
        mut_arg("force", |a: Arg| a.help("Replace an existing recording at -o"))
    )]
    Record(RecordArgs),
    /// Watch host memory and the job's GPU memory; stop the job (SIGTERM to every process of it,
    /// SIGKILL after --grace) before the kernel starts failing allocations. A started job gets a
    /// cgroup of its own where the system allows it, and its API calls are traced as under
    /// record, so host memory it pins in place (cudaHostRegister, which no counter shows) counts
    /// toward --max-job-host-gpu. Exits with the job's status, or 4 when guard stopped it.
    #[command(after_help = help_text::GUARD, override_usage = help_text::GUARD_USAGE)]
    Guard(GuardArgs),
    /// Prometheus / OpenMetrics exporter: /metrics, /healthz, /snapshot.json. Samples in the
    /// background; a scrape never costs a /proc scan.
    #[command(after_help = help_text::SERVE)]
    Serve(ServeArgs),
    /// Write a Markdown bug report: environment, GPUs, per-fd accounting, findings, and with
    /// recordings their peaks, timeline findings and (two recordings) the bad-vs-good table.
    #[command(
        after_help = help_text::REPORT,
        mut_arg("output", |a: Arg| a.help("Output file (default: standard output)"))
    )]
    Report(ReportArgs),
    /// Draw one or two recordings as a self-contained HTML page (inline SVG, no scripts):
    /// timelines per rank and device, host counters, allocator steps, findings, and the diff.
    #[command(
        after_help = help_text::PLOT,
        mut_arg("output", |a: Arg| a
            .help("Output HTML file")
            .default_value(plot::DEFAULT_PLOT))
    )]
    Plot(PlotArgs),
    /// Live terminal view: host memory, devices, processes, findings, sparklines.
    #[command(after_help = help_text::TOP)]
    Top(TopArgs),
    /// Project the pinned host RAM a job would need at N ranks if every rank's segments are
    /// mirrored on its peers, and say at which rank count it stops fitting on this machine.
    #[command(after_help = help_text::PROJECT, override_usage = help_text::PROJECT_USAGE)]
    Project(ProjectArgs),
    /// Record a command as given and once per control (an environment change such as a debug
    /// key or a device mask), then print the comparison and which control removes the effect.
    #[command(after_help = help_text::EXPERIMENT)]
    Experiment(ExperimentArgs),
    /// Preflight: runtime and kernel versions, GPUs and their PCI topology, the job's device
    /// masks and rank count (from `-- CMD`, which is not run), the known issues that apply and
    /// the host RAM the job would need if their pattern occurs. Exits 3 with --fail-on when a
    /// known issue at that level applies.
    #[command(
        after_help = help_text::DOCTOR,
        mut_arg("fail_on", |a: Arg| a
            .help("Exit with status 3 when a known issue of this severity or worse applies"))
    )]
    Doctor(DoctorArgs),
    /// Summarise a recording: peaks per rank and device, host low points, timeline findings.
    #[command(
        after_help = help_text::SHOW,
        mut_arg("fail_on", |a: Arg| a
            .help("Exit with status 3 when the recording holds a finding of this severity or \
                   worse (at its worst over time)"))
    )]
    Show(ShowArgs),
    /// Compare two recordings: the bad-vs-good table, and which run shows pinned peer mirrors.
    #[command(
        after_help = help_text::DIFF,
        mut_arg("fail_on", |a: Arg| a
            .help("Exit with status 3 when either run shows the peer-mirror pattern at this \
                   severity or worse"))
    )]
    Diff(DiffArgs),
    /// Write a capture of this machine (host counters, DRM devices, GPU processes' fdinfo) for
    /// offline analysis with --root, or to attach to a bug report.
    #[command(
        after_help = help_text::CAPTURE,
        mut_arg("output", |a: Arg| a
            .help("Output: FILE.tar.zst for an archive, or a directory for a plain tree")
            .default_value(capture::DEFAULT_CAPTURE))
    )]
    Capture(CaptureArgs),
    /// Print a shell completion script: `gpuledger completions bash > /etc/bash_completion.d/gpuledger`.
    #[command(after_help = help_text::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Print the man page (roff), generated from this command line: `gpuledger man > gpuledger.1`.
    #[command(hide = true, after_help = help_text::MAN)]
    Man(ManArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The old spellings of the output flags keep working for scripts and CI.
    #[test]
    fn old_output_spellings_are_hidden_aliases() {
        let cli = Cli::try_parse_from(["gpuledger", "simulate", "leak", "--out", "t"]).unwrap();
        let Some(Command::Simulate(s)) = cli.command else {
            unreachable!("parsed as simulate")
        };
        assert_eq!(s.output.output, Some(PathBuf::from("t")));
        let cli = Cli::try_parse_from(["gpuledger", "demo", "--keep", "d"]).unwrap();
        let Some(Command::Demo(d)) = cli.command else {
            unreachable!("parsed as demo")
        };
        assert_eq!(d.output, Some(PathBuf::from("d")));
        let help = Cli::command()
            .find_subcommand_mut("simulate")
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default();
        assert!(
            help.contains("--output <DIR>") && !help.contains("--out "),
            "{help}"
        );
    }

    /// Plans `args` (after `gpuledger`).
    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        let cli = Cli::try_parse_from([&["gpuledger"], args].concat())?;
        cli.plan(&globals::tests::plain())
    }

    #[test]
    fn every_command_plans_from_its_flags() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new");
        let f = new.to_str().unwrap();
        let recording = dir.path().join("a.ledger");
        std::fs::write(&recording, "").unwrap();
        let a = recording.to_str().unwrap();
        let lines: [&[&str]; 12] = [
            &["--json", "--sort", "pid"],
            &["top", "--sort", "pid"],
            &["serve", "--listen", ":9464", "--min-process-bytes", "1MiB"],
            &["project", "--ranks", "8", "--vram-per-rank", "16GiB"],
            &["report", "-o", f, "--template", "generic"],
            &["plot", a, "-o", f],
            &["capture", "-o", f],
            &["simulate", "leak", "-o", f],
            &["doctor", "--json", "--fail-on", "warning"],
            &["demo"],
            &["completions", "bash"],
            &["man"],
        ];
        for args in lines {
            if let Err(e) = plan(args) {
                panic!("{args:?}: {e:#}");
            }
        }
        let Ok(Plan::Project(p)) = plan(&["project", "--ranks", "8", "--from", "r.ledger"]) else {
            panic!("a project plan")
        };
        assert_eq!(p.basis, Basis::Recording("r.ledger".into()));
        let Ok(Plan::Report(r)) = plan(&["report", "-o", "-"]) else {
            panic!("a report plan")
        };
        assert_eq!(r.output, None, "-o - is standard output");
    }

    #[test]
    fn bad_combinations_are_refused_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let there = dir.path().join("there");
        std::fs::write(&there, "").unwrap();
        let t = there.to_str().unwrap();
        for args in [vec!["report", "-o", t], vec!["plot", t, "-o", t]] {
            let err = plan(&args).unwrap_err().to_string();
            assert!(err.contains("add --force"), "{args:?}: {err}");
        }
        assert!(plan(&["plot", t, "-o", t, "--force"]).is_ok());
        for command in ["plot", "report"] {
            let err = plan(&[command, "missing.ledger", "-o", t])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("cannot read recording missing.ledger"),
                "a missing input is said before an existing output: {err}"
            );
        }
        let err = plan(&["--json", "show", "x"]).unwrap_err().to_string();
        assert!(err.contains("gpuledger show --json FILE"), "{err}");
        assert!(plan(&["doctor", "--format", "csv"]).is_ok());
        assert!(plan(&["simulate", "leak"]).is_err(), "simulate needs -o");
    }

    #[test]
    fn every_reporting_command_takes_format_and_fail_on() {
        for command in ["show", "diff", "doctor"] {
            let mut cli = Cli::command();
            let sub = cli.find_subcommand_mut(command).expect(command);
            for flag in ["format", "json", "fail_on"] {
                assert!(
                    sub.get_arguments().any(|a| a.get_id() == flag),
                    "{command} lacks {flag}"
                );
            }
        }
    }
}
