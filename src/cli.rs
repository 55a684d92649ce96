//! Command-line definition (clap derive). Every value is parsed and range-checked here, in clap
//! value parsers, so a bad value is a usage error (exit 2) before any work; `commands` does the
//! work with typed values.

use crate::help_text;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use gpuledger::job_output::RateSpec;
use gpuledger::sim::Scenario;
use gpuledger::timeline::project::MAX_RANKS;
use gpuledger::units::{
    parse_bytes, parse_duration, parse_interval, parse_size_spec, short_unit_note, SizeError,
    SizeSpec,
};
use std::collections::BTreeSet;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// The heading of the options every command takes.
const GLOBAL: &str = "Global options";

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
    after_help = help_text::SNAPSHOT
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
        value_parser = threshold,
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

/// `--pid` and `--device`: which processes and devices a view shows. Findings are computed on
/// the whole machine (or recording) first; those about other pids and devices are then hidden,
/// so a filter never changes a verdict.
#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Show only these pids (repeat, or comma-separate). A pid that holds no GPU memory or GPU fd
    /// is an error (exit 1). Findings are judged on the whole machine, then those about other
    /// pids and devices are hidden: a filter never changes a verdict.
    #[arg(long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// Show only these devices: a PCI slot (0000:03:00.0), a DRM minor (card1, renderD129) or an
    /// index in the device table's order (0..N). No such device is an error (exit 1).
    #[arg(
        long = "device",
        visible_alias = "id",
        value_name = "ID",
        value_delimiter = ','
    )]
    pub devices: Vec<String>,
}

/// Snapshot output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables for people.
    Table,
    /// The gpuledger.snapshot/1 document (JSON Lines with --loop).
    Json,
    /// One row per process × device × region, header first, bytes as integers (like
    /// nvidia-smi --format=csv,nounits).
    Csv,
}

/// Process orders for --sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortArg {
    /// Host-class (GTT/system) resident bytes, largest first.
    Host,
    /// Device-local (VRAM) resident bytes, largest first.
    Local,
    /// Pid.
    Pid,
    /// Rank, then pid (the default of the snapshot).
    Rank,
}

impl SortArg {
    /// The library's sort key.
    pub fn key(self) -> gpuledger::ledger::SortKey {
        use gpuledger::ledger::SortKey;
        match self {
            SortArg::Host => SortKey::Host,
            SortArg::Local => SortKey::Local,
            SortArg::Pid => SortKey::Pid,
            SortArg::Rank => SortKey::Rank,
        }
    }
}

/// Options of the default snapshot command.
#[derive(Debug, Args)]
#[command(next_help_heading = "Snapshot options")]
pub struct SnapshotArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "table", value_name = "FORMAT")]
    pub format: Format,

    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Repeat the snapshot every INTERVAL (10ms or more) until interrupted, as nvidia-smi -l:
    /// tables under a timestamp line, JSON as one compact document per line, CSV rows under one
    /// header. Ctrl-C or a closed pipe ends it with status 0.
    #[arg(short = 'l', long = "loop", value_name = "INTERVAL", value_parser = parse_interval)]
    pub loop_interval: Option<Duration>,

    /// With --loop: stop after N snapshots.
    #[arg(long, value_name = "N", requires = "loop_interval", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// Order of the process rows (table, JSON and CSV).
    #[arg(long, value_enum, default_value = "rank", value_name = "KEY")]
    pub sort: SortArg,

    #[command(flatten)]
    pub filter: FilterArgs,

    /// Exit with status 3 when a finding of this severity or worse exists (among those shown,
    /// with --pid/--device; in any snapshot, with --loop).
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,

    /// Explain a finding kind (snapshot and timeline findings) and exit.
    #[arg(long, value_name = "FINDING", value_parser = PossibleValuesParser::new(gpuledger::findings::EXPLAINED))]
    pub explain: Option<String>,

    /// List every finding in the table; by default more than four of one kind and severity are
    /// one line (64 ranks × 63 peers, bytes each and in all). JSON always lists each.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

impl SnapshotArgs {
    /// The first snapshot option given (a default left alone is not given), so that one written
    /// before a command, where it would mean nothing, is refused instead of ignored.
    pub fn given(&self) -> Option<&'static str> {
        [
            (self.json, "--json"),
            (self.format != Format::Table, "--format"),
            (self.loop_interval.is_some(), "--loop"),
            (self.count.is_some(), "--count"),
            (self.sort != SortArg::Rank, "--sort"),
            (!self.filter.pids.is_empty(), "--pid"),
            (!self.filter.devices.is_empty(), "--device"),
            (self.fail_on.is_some(), "--fail-on"),
            (self.explain.is_some(), "--explain"),
            (self.verbose, "--verbose"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// Severity for --fail-on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Warning or critical.
    Warning,
    /// Critical only.
    Critical,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the seed scenario twice in the simulator (eager and deferred backing), record both,
    /// and show the bad run's snapshot, its timeline findings and the diff. Needs no GPU.
    #[command(after_help = help_text::DEMO)]
    Demo {
        /// Keep the simulated trees and recordings in this directory.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
    },
    /// Write a capture tree of a simulated machine (for what-if questions and tests).
    #[command(after_help = help_text::SIMULATE)]
    Simulate(SimulateArgs),
    /// Run a command (or attach to pids) and record its GPU and host memory over time.
    #[command(after_help = help_text::RECORD, override_usage = help_text::RECORD_USAGE)]
    Record(RecordArgs),
    /// Watch host memory and the job's GPU memory; stop the job (SIGTERM to every process of it,
    /// SIGKILL after --grace) before the kernel starts failing allocations. A started job gets a
    /// cgroup of its own where the system allows it. Exits with the job's status, or 4 when guard
    /// stopped it.
    #[command(after_help = help_text::GUARD, override_usage = help_text::GUARD_USAGE)]
    Guard(GuardArgs),
    /// Prometheus / OpenMetrics exporter: /metrics, /healthz, /snapshot.json. Samples in the
    /// background; a scrape never costs a /proc scan.
    #[command(after_help = help_text::SERVE)]
    Serve {
        /// Address to listen on: HOST:PORT (host names resolve, e.g. localhost:9464), or :PORT for
        /// every interface as Prometheus exporters do. Loopback by default.
        #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR:PORT", value_parser = listen_addr)]
        listen: SocketAddr,
        /// Sampling interval (10ms or more).
        #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_interval)]
        interval: Duration,
        /// Fold processes with less resident GPU memory than this into pid="other".
        #[arg(long, default_value = "64MiB", value_name = "SIZE", value_parser = size)]
        min_process_bytes: u64,
        /// Most per-process series; further processes are folded into pid="other".
        #[arg(long, default_value_t = 5000, value_name = "N")]
        max_series: usize,
        /// Show command lines in /snapshot.json as they are. By default arguments that look
        /// like secrets (--token=…, --hf-token …, *_KEY=…, password options, URLs with a
        /// password) are replaced by <redacted>: anyone who reaches the port reads them.
        #[arg(long)]
        show_cmdline: bool,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Write a Markdown bug report: environment, GPUs, per-fd accounting, findings, and with
    /// recordings their peaks, timeline findings and (two recordings) the bad-vs-good table.
    #[command(after_help = help_text::REPORT)]
    Report {
        /// Zero, one or two runs (A = bad, B = good), each a recording or a directory of one
        /// job's recordings (one per node: the worst node is quoted, every node is listed).
        #[arg(value_name = "RECORDING|DIR", num_args = 0..=2)]
        recordings: Vec<PathBuf>,
        /// Output file (default: standard output).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Report template.
        #[arg(long, value_enum, default_value = "intel-compute-runtime")]
        template: TemplateArg,
        /// Hide the hostname and user names.
        #[arg(long)]
        redact: bool,
        /// List every finding; by default more than four of one kind and severity are one line.
        #[arg(short = 'v', long)]
        verbose: bool,
    },
    /// Draw one or two recordings as a self-contained HTML page (inline SVG, no scripts):
    /// timelines per rank and device, host counters, allocator steps, findings, and the diff.
    #[command(after_help = help_text::PLOT)]
    Plot {
        /// One or two runs, each a recording or a directory of one job's recordings (one per
        /// node: the worst node is drawn, every node is listed).
        #[arg(value_name = "RECORDING|DIR", num_args = 1..=2, required = true)]
        recordings: Vec<PathBuf>,
        /// Output HTML file.
        #[arg(
            short,
            long,
            default_value = "gpuledger-report.html",
            value_name = "FILE"
        )]
        output: PathBuf,
    },
    /// Live terminal view: host memory, devices, processes, findings, sparklines.
    #[command(after_help = help_text::TOP)]
    Top {
        /// Refresh interval (10ms or more).
        #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = parse_interval)]
        interval: Duration,
        /// First order of the process table (the s key cycles it).
        #[arg(long, value_enum, default_value = "host", value_name = "KEY")]
        sort: SortArg,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Project the pinned host RAM a job would need at N ranks if every rank's segments are
    /// mirrored on its peers, and say at which rank count it stops fitting on this machine.
    #[command(
        group(ArgGroup::new("basis").args(["from", "vram_per_rank"]).required(true)),
        after_help = help_text::PROJECT,
        override_usage = help_text::PROJECT_USAGE
    )]
    Project {
        /// Ranks to project to.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=i64::from(MAX_RANKS)))]
        ranks: u32,
        /// Take the per-peer mirror size from a recording (largest host-class bytes a rank held on
        /// a device other than its home).
        #[arg(long, value_name = "RECORDING", conflicts_with = "vram_per_rank")]
        from: Option<PathBuf>,
        /// Or give each rank's VRAM working set.
        #[arg(long, value_name = "SIZE", value_parser = size)]
        vram_per_rank: Option<u64>,
        /// Peers each rank's segments are mirrored on.
        #[arg(long, value_enum, default_value = "all")]
        peers: PeersArg,
        /// Host RAM to project against (default: this machine's MemTotal, minus what is in use).
        #[arg(long, value_name = "SIZE", value_parser = nonzero_bytes)]
        host_mem: Option<u64>,
    },
    /// Record a command as given and once per control (an environment change such as a debug
    /// key or a device mask), then print the comparison and which control removes the effect.
    #[command(after_help = help_text::EXPERIMENT)]
    Experiment {
        /// Controls, comma-separated: built-in names or NAME:VAR=VAL,... (default: all built-in).
        #[arg(long, value_name = "LIST")]
        controls: Vec<String>,
        /// Runs per configuration (medians are compared).
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// List the built-in controls and exit.
        #[arg(long)]
        list_controls: bool,
        /// Directory for the recordings.
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// Sampling interval (10ms or more).
        #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = parse_interval)]
        interval: Duration,
        /// The command, after `--`.
        #[arg(
            last = true,
            value_name = "CMD",
            required_unless_present = "list_controls"
        )]
        command: Vec<String>,
    },
    /// Preflight: runtime and kernel versions, GPUs and their PCI topology, the job's device
    /// masks and rank count (from `-- CMD`, which is not run), the known issues that apply and
    /// the host RAM the job would need if their pattern occurs. Exits 3 with --fail-on when a
    /// known issue at that level applies.
    #[command(after_help = help_text::DOCTOR)]
    Doctor(DoctorArgs),
    /// Summarise a recording: peaks per rank and device, host low points, timeline findings.
    #[command(after_help = help_text::SHOW)]
    Show {
        /// The recording; several recordings (or a directory of them) of one job, one per node,
        /// are shown as one job: per-rank peaks across nodes, the worst node, findings by node.
        #[arg(required = true, value_name = "RECORDING|DIR")]
        files: Vec<PathBuf>,
        /// Print JSON (gpuledger.show/1).
        #[arg(long)]
        json: bool,
        /// List every finding; by default more than four of one kind and severity are one line.
        /// JSON always lists each.
        #[arg(short = 'v', long)]
        verbose: bool,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Compare two recordings: the bad-vs-good table, and which run shows pinned peer mirrors.
    #[command(after_help = help_text::DIFF)]
    Diff {
        /// Run A: a recording, or a directory of one job's recordings (one per node).
        #[arg(value_name = "A")]
        a: PathBuf,
        /// Run B: the same.
        #[arg(value_name = "B")]
        b: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a capture of this machine (host counters, DRM devices, GPU processes' fdinfo) for
    /// offline analysis with --root, or to attach to a bug report.
    #[command(after_help = help_text::CAPTURE)]
    Capture {
        /// Output: FILE.tar.zst for an archive, or a directory for a plain tree.
        #[arg(short, long, default_value = "gpuledger-capture.tar.zst")]
        output: PathBuf,
        /// Only these pids (default: every process holding GPU fds). A capture is evidence: it
        /// is never filtered by device, and --pid here chooses what is captured, not shown.
        #[arg(long = "pid", value_name = "PID")]
        pids: Vec<u32>,
        /// Overwrite an existing output file.
        #[arg(long)]
        force: bool,
    },
    /// Print a shell completion script: `gpuledger completions bash > /etc/bash_completion.d/gpuledger`.
    #[command(after_help = help_text::COMPLETIONS)]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from this command line: `gpuledger man > gpuledger.1`.
    #[command(hide = true, after_help = help_text::MAN)]
    Man {
        /// Write one page per command into DIR instead (gpuledger.1, gpuledger-record.1, …).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `simulate` options.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The scenario (--help describes each).
    #[arg(value_parser = PossibleValuesParser::new(Scenario::ALL.map(scenario_value)).try_map(scenario))]
    pub scenario: Scenario,
    /// Directory to write the capture tree into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Ranks (one GPU each, 1 to 64); default from the scenario.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub ranks: Option<u32>,
    /// Peer registrations pinned at once (eager, like compute-runtime 26.22) or bookkeeping only
    /// (deferred, like 26.05).
    #[arg(long, value_enum, default_value = "eager")]
    pub backing: BackingArg,
    /// Host RAM of the simulated machine.
    #[arg(long, default_value = "64GiB", value_name = "SIZE", value_parser = nonzero_bytes)]
    pub host_mem: u64,
    /// Allocator segment sizes, comma-separated (default: six of the seed's 3,174,400 KiB).
    #[arg(long, value_name = "SIZE,...", value_delimiter = ',', value_parser = nonzero_bytes)]
    pub segments: Vec<u64>,
    /// Simulate a kernel without GPUActive (before Linux 7.1): pins show only as unaccounted.
    #[arg(long)]
    pub no_gpu_accounting: bool,
    /// Keep rewriting the tree in place for this long as the job runs (e.g. 60s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub live: Option<Duration>,
    /// Write the tree as it stands this far into the run (e.g. 8s), instead of the moment the
    /// job dies or, when it survives, its plateau.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "live")]
    pub at: Option<Duration>,
    /// Replace what a non-empty --out directory holds (otherwise it is refused).
    #[arg(long)]
    pub force: bool,
}

/// Backing modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackingArg {
    /// Pinned at registration.
    Eager,
    /// Bookkeeping only.
    Deferred,
}

/// `record` options.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").args(["command", "pids", "all", "cgroup", "slurm_job"]).required(true)))]
pub struct RecordArgs {
    /// Output recording (SQLite); default gpuledger-<UTC time>-<pid>.ledger here.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Sampling interval (10ms or more).
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Duration,
    /// Attach to these pids (and their children) instead of running a command.
    #[arg(long = "pid", value_name = "PID", conflicts_with = "all")]
    pub pids: Vec<u32>,
    /// Record every process.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub job: JobArgs,
    /// A label for the recording's `meta` (with --all, --cgroup or --slurm-job), e.g.
    /// --label slurm_job=42; repeatable; overrides a label gpuledger found itself.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label, conflicts_with_all = ["pids", "command"])]
    pub labels: Vec<(String, String)>,
    /// Stop after this long (with --pid, --all or a job; a command is recorded until it exits).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Take a throughput series from the command's output: NAME=REGEX[:UNIT], the regex with
    /// one capture group around the number, e.g. 'wave=wave time ([0-9.]+) s:s/wave'. Repeatable.
    #[arg(long = "rate", value_name = "NAME=REGEX[:UNIT]", value_parser = parse_rate)]
    pub rates: Vec<RateSpec>,
    /// Trace the command's GPU memory API calls (which call allocated, pinned or registered
    /// which bytes): the default when libgpuledger_tracer.so is beside gpuledger (or in
    /// GPULEDGER_TRACER) and the job sets no CUDA_INJECTION64_PATH of its own; given
    /// explicitly, a job that cannot be traced is an error.
    #[arg(long, overrides_with = "no_trace")]
    pub trace: bool,
    /// Do not trace the command's API calls.
    #[arg(long, overrides_with = "trace")]
    pub no_trace: bool,
    /// The command to run and record, with its arguments (after `--` when an argument of it
    /// could be read as an option of record's own).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Attaching to a job's processes as they come and go (`record` and `guard`).
#[derive(Debug, Args)]
pub struct JobArgs {
    /// Follow every process in this cgroup and below it: a path as /proc/PID/cgroup shows it, or
    /// the directory under /sys/fs/cgroup. Ends when the cgroup is removed or, after it had
    /// processes, empty.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// Follow Slurm job ID on this node: its cgroup (…/slurmstepd.scope/job_ID/step_*), or its
    /// slurmstepd's processes where Slurm tracks jobs without cgroups. Waits up to a minute for
    /// the job to appear (a prolog runs before it does).
    #[arg(long, value_name = "ID", value_parser = slurm_job_id)]
    pub slurm_job: Option<String>,
}

fn label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v))
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!(
            "{s:?} is not KEY=VALUE with a KEY of letters, digits and _"
        )),
    }
}

fn slurm_job_id(s: &str) -> Result<String, String> {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a Slurm job id (digits, as in $SLURM_JOB_ID)"
        ))
    }
}

fn parse_rate(s: &str) -> Result<RateSpec, String> {
    RateSpec::parse(s).map_err(|e| e.to_string())
}

/// What guard does when a threshold is crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GuardAction {
    /// SIGTERM to the job, SIGKILL after --grace.
    Term,
    /// SIGKILL at once.
    Kill,
    /// Only warn (for trying thresholds).
    None,
}

/// `guard` options.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("job_target").args(["command", "pids", "cgroup", "slurm_job"]).required(true)))]
pub struct GuardArgs {
    /// Act when MemAvailable falls below this (a size, or a share of MemTotal from 0% to 100%).
    #[arg(long, default_value = "10%", value_name = "SIZE|PCT", value_parser = size_spec)]
    pub min_available: SizeSpec,
    /// Act when driver-held host memory (GPUActive, nr_gpu_active, else unaccounted) passes this.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_driver_held: Option<u64>,
    /// Act when the job's own processes hold more host-class GPU memory than this (GTT/system
    /// regions, KFD, NVIDIA pinned host memory).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_job_host_gpu: Option<u64>,
    /// What to do.
    #[arg(long, value_enum, default_value = "term")]
    pub action: GuardAction,
    /// Time between SIGTERM and SIGKILL.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub grace: Duration,
    /// Sampling interval (10ms or more).
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Duration,
    /// Print one JSON event line per warning or action on stdout (for log shippers).
    #[arg(long)]
    pub json: bool,
    /// Guard these running processes instead of starting a command.
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    #[command(flatten)]
    pub job: JobArgs,
    /// The command to run under guard, with its arguments (after `--` when an argument of it
    /// could be read as an option of guard's own).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Report templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TemplateArg {
    /// intel/compute-runtime's Linux GPU driver issue form.
    IntelComputeRuntime,
    /// Any driver or runtime.
    Generic,
}

/// Peer sets for `project`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PeersArg {
    /// Every other rank's device (one Level Zero context over all cards).
    All,
    /// Ring neighbours only.
    Ring,
}

/// A size that must be above zero (a machine's RAM, an allocator segment).
fn nonzero_bytes(text: &str) -> Result<u64, String> {
    match size(text) {
        Ok(0) => Err(format!("invalid size {text:?}: must be more than 0")),
        Ok(b) => Ok(b),
        Err(e) => Err(e.to_string()),
    }
}

/// Prints "8G read as 8 GiB" for a size with a short unit, once per value for the whole run.
fn note_short_unit(text: &str) {
    static NOTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let Some(note) = short_unit_note(text) else {
        return;
    };
    let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
    if noted.insert(note.clone()) {
        eprintln!("gpuledger: {note}");
    }
}

/// An absolute size with a unit (`24GiB`, `8G`); a bare number is refused with the fix.
fn size(text: &str) -> Result<u64, SizeError> {
    let bytes = parse_bytes(text)?;
    note_short_unit(text);
    Ok(bytes)
}

/// A size with a unit, or a share of a reference total (`10%`).
fn size_spec(text: &str) -> Result<SizeSpec, SizeError> {
    let spec = parse_size_spec(text)?;
    note_short_unit(text);
    Ok(spec)
}

/// Checks one `--threshold NAME=VALUE` so that a bad one is a usage error naming its cause (clap
/// prints only the error's own message, so the chain is joined here); the context applies it.
fn threshold(text: &str) -> Result<String, String> {
    if let Err(e) = gpuledger::findings::Thresholds::default().set(text) {
        let mut message = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            message.push_str(&format!(": {c}"));
            cause = c.source();
        }
        return Err(message);
    }
    if let Some((_, value)) = text.split_once('=') {
        note_short_unit(value);
    }
    Ok(text.to_string())
}

/// A scenario's name with what it models, for `simulate --help`.
fn scenario_value(s: Scenario) -> PossibleValue {
    PossibleValue::new(s.name()).help(help_text::scenario(s))
}

/// A scenario by name (the possible-values parser in front of it lists the names).
fn scenario(name: String) -> Result<Scenario, String> {
    Scenario::parse(&name).ok_or_else(|| format!("unknown scenario {name:?}"))
}

/// `--listen`: `HOST:PORT` (resolved through the system resolver, first address wins) or `:PORT`,
/// which means every interface, as in Prometheus exporters' `--web.listen-address`.
pub fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    let wanted = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_string(),
    };
    let bad = |why: String| {
        format!("invalid address {text:?}: {why}; write HOST:PORT or :PORT, e.g. 127.0.0.1:9464")
    };
    wanted
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("the name resolves to no address".into()))
}

/// `doctor` options.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON (gpuledger.doctor/1).
    #[arg(long)]
    pub json: bool,
    /// Exit with status 3 when a known issue of this severity or worse applies.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// Device memory each rank allocates, to project the pinned host RAM against this machine.
    #[arg(long, value_name = "SIZE", value_parser = nonzero_bytes)]
    pub vram_per_rank: Option<u64>,
    /// The job's command, after `--`: its environment is this shell's, read and not run.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn listen_port_only_is_every_interface_and_names_resolve() {
        assert_eq!(listen_addr(":9464"), Ok("0.0.0.0:9464".parse().unwrap()));
        assert!(listen_addr("localhost:9464").unwrap().ip().is_loopback());
        assert_eq!(listen_addr("[::1]:1"), Ok("[::1]:1".parse().unwrap()));
        assert!(listen_addr("9464").is_err());
        assert!(listen_addr(":99999").is_err());
    }

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
