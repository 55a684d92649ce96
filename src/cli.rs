//! Command-line definition (clap derive). Parsing only; `commands` does the work.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Shows, proves and prevents GPU-driver memory blowups.
///
/// With no command, prints a snapshot of this machine: host memory (with GPUActive or the
/// unaccounted residual), DRM devices, GPU memory per process × device split into device-local
/// (VRAM) and host-class (GTT/system) bytes, and findings such as the peer-mirror pattern.
#[derive(Debug, Parser)]
#[command(name = "gpuledger", version, propagate_version = true)]
pub struct Cli {
    /// Read a capture tree or a capture archive (.tar.zst) instead of the live machine.
    #[arg(long, global = true, value_name = "DIR|FILE")]
    pub root: Option<PathBuf>,

    /// Read /proc from PATH (the host's /proc mounted inside a container, e.g. /host/proc).
    #[arg(long = "proc", global = true, value_name = "PATH")]
    pub proc_dir: Option<PathBuf>,

    /// Set a finding threshold, e.g. --threshold peer.min_bytes=512MiB (see --explain).
    #[arg(long = "threshold", global = true, value_name = "NAME=VALUE")]
    pub thresholds: Vec<String>,

    #[command(flatten)]
    pub snapshot: SnapshotArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options of the default snapshot command.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Print the gpuledger.snapshot/1 JSON document instead of tables.
    #[arg(long)]
    pub json: bool,

    /// Exit with status 3 when a finding of this severity or worse exists.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,

    /// Explain a finding (peer_mirror, driver_held_host, host_pressure, evicted_to_host) and exit.
    #[arg(long, value_name = "FINDING")]
    pub explain: Option<String>,
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
    Demo {
        /// Keep the simulated trees and recordings in this directory.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
    },
    /// Write a capture tree of a simulated machine (for what-if questions and tests).
    Simulate(SimulateArgs),
    /// Run a command (or attach to pids) and record its GPU and host memory over time.
    Record(RecordArgs),
    /// Watch host memory and the job's GPU memory; stop the job (SIGTERM to every process of it,
    /// SIGKILL after --grace) before the kernel starts failing allocations. A started job gets a
    /// cgroup of its own where the system allows it. Exits with the job's status, or 4 when guard
    /// stopped it.
    Guard(GuardArgs),
    /// Prometheus / OpenMetrics exporter: /metrics, /healthz, /snapshot.json. Samples in the
    /// background; a scrape never costs a /proc scan.
    Serve {
        /// Address to listen on (loopback by default; another address must be given explicitly).
        #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR:PORT")]
        listen: std::net::SocketAddr,
        /// Sampling interval.
        #[arg(long, default_value = "5s", value_name = "DURATION")]
        interval: String,
        /// Fold processes with less resident GPU memory than this into pid="other".
        #[arg(long, default_value = "64MiB", value_name = "SIZE")]
        min_process_bytes: String,
        /// Most per-process series; further processes are folded into pid="other".
        #[arg(long, default_value_t = 5000, value_name = "N")]
        max_series: usize,
    },
    /// Write a Markdown bug report: environment, GPUs, per-fd accounting, findings, and with
    /// recordings their peaks, timeline findings and (two recordings) the bad-vs-good table.
    Report {
        /// Zero, one or two recordings (A = bad, B = good).
        #[arg(value_name = "RECORDING", num_args = 0..=2)]
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
    },
    /// Draw one or two recordings as a self-contained HTML page (inline SVG, no scripts):
    /// timelines per rank and device, host counters, allocator steps, findings, and the diff.
    Plot {
        /// One or two recordings.
        #[arg(value_name = "RECORDING", num_args = 1..=2, required = true)]
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
    Top {
        /// Refresh interval.
        #[arg(long, default_value = "1s", value_name = "DURATION")]
        interval: String,
    },
    /// Project the pinned host RAM a job would need at N ranks if every rank's segments are
    /// mirrored on its peers, and say at which rank count it stops fitting on this machine.
    Project {
        /// Ranks to project to.
        #[arg(long, value_name = "N")]
        ranks: u32,
        /// Take the per-peer mirror size from a recording (largest host-class bytes a rank held on
        /// a device other than its home).
        #[arg(long, value_name = "RECORDING", conflicts_with = "vram_per_rank")]
        from: Option<PathBuf>,
        /// Or give each rank's VRAM working set.
        #[arg(long, value_name = "SIZE")]
        vram_per_rank: Option<String>,
        /// Peers each rank's segments are mirrored on.
        #[arg(long, value_enum, default_value = "all")]
        peers: PeersArg,
        /// Host RAM to project against (default: this machine's MemTotal, minus what is in use).
        #[arg(long, value_name = "SIZE")]
        host_mem: Option<String>,
    },
    /// Record a command as given and once per control (an environment change such as a debug
    /// key or a device mask), then print the comparison and which control removes the effect.
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
        /// Sampling interval.
        #[arg(long, default_value = "500ms", value_name = "DURATION")]
        interval: String,
        /// The command, after `--`.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Preflight: runtime and kernel versions, GPUs and their PCI topology, the job's device
    /// masks and rank count (from `-- CMD`, which is not run), the known issues that apply and
    /// the host RAM the job would need if their pattern occurs. Exits 3 with --fail-on when a
    /// known issue at that level applies.
    Doctor(DoctorArgs),
    /// Summarise a recording: peaks per rank and device, host low points, timeline findings.
    Show {
        /// The recording.
        file: PathBuf,
        /// Print JSON (gpuledger.show/1).
        #[arg(long)]
        json: bool,
    },
    /// Compare two recordings: the bad-vs-good table, and which run shows pinned peer mirrors.
    Diff {
        /// Run A.
        a: PathBuf,
        /// Run B.
        b: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a capture of this machine (host counters, DRM devices, GPU processes' fdinfo) for
    /// offline analysis with --root, or to attach to a bug report.
    Capture {
        /// Output: FILE.tar.zst for an archive, or a directory for a plain tree.
        #[arg(short, long, default_value = "gpuledger-capture.tar.zst")]
        output: PathBuf,
        /// Only these pids (default: every process holding GPU fds).
        #[arg(long = "pid", value_name = "PID")]
        pids: Vec<u32>,
    },
}

/// `simulate` options.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// ddp-peer-mirror, single-gpu, leak or amdgpu-tp.
    pub scenario: String,
    /// Directory to write the capture tree into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Ranks (one GPU each); default from the scenario.
    #[arg(long)]
    pub ranks: Option<u32>,
    /// Peer registrations pinned at once (eager, like compute-runtime 26.22) or bookkeeping only
    /// (deferred, like 26.05).
    #[arg(long, value_enum, default_value = "eager")]
    pub backing: BackingArg,
    /// Host RAM of the simulated machine.
    #[arg(long, default_value = "64GiB", value_name = "SIZE")]
    pub host_mem: String,
    /// Allocator segment sizes, comma-separated (default: six of the seed's 3,174,400 KiB).
    #[arg(long, value_name = "SIZE,...")]
    pub segments: Option<String>,
    /// Simulate a kernel without GPUActive (before Linux 7.1): pins show only as unaccounted.
    #[arg(long)]
    pub no_gpu_accounting: bool,
    /// Keep rewriting the tree in place for this long as the job runs (e.g. 60s).
    #[arg(long, value_name = "DURATION")]
    pub live: Option<String>,
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
pub struct RecordArgs {
    /// Output recording (SQLite); default gpuledger-<time>.ledger.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Sampling interval.
    #[arg(long, default_value = "500ms", value_name = "DURATION")]
    pub interval: String,
    /// Attach to these pids (and their children) instead of running a command.
    #[arg(long = "pid", value_name = "PID", conflicts_with = "all")]
    pub pids: Vec<u32>,
    /// Record every process.
    #[arg(long)]
    pub all: bool,
    /// Stop after this long (with --pid or --all; a command is recorded until it exits).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// The command to run and record, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
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
pub struct GuardArgs {
    /// Act when MemAvailable falls below this (a size, or a share of MemTotal).
    #[arg(long, default_value = "10%", value_name = "SIZE|PCT")]
    pub min_available: String,
    /// Act when driver-held host memory (GPUActive, nr_gpu_active, else unaccounted) passes this.
    #[arg(long, value_name = "SIZE")]
    pub max_driver_held: Option<String>,
    /// Act when the job's own processes hold more host-class GPU memory than this (GTT/system
    /// regions, KFD, NVIDIA pinned host memory).
    #[arg(long, value_name = "SIZE")]
    pub max_job_host_gpu: Option<String>,
    /// What to do.
    #[arg(long, value_enum, default_value = "term")]
    pub action: GuardAction,
    /// Time between SIGTERM and SIGKILL.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub grace: String,
    /// Sampling interval.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub interval: String,
    /// Print one JSON event line per warning or action on stdout (for log shippers).
    #[arg(long)]
    pub json: bool,
    /// Guard these running processes instead of starting a command.
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    /// The command to run under guard, after `--`.
    #[arg(last = true, value_name = "CMD")]
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
    #[arg(long, value_name = "SIZE", value_parser = doctor_size)]
    pub vram_per_rank: Option<u64>,
    /// The job's command, after `--`: its environment is this shell's, read and not run.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `--vram-per-rank`: a size such as 16GiB.
fn doctor_size(text: &str) -> Result<u64, String> {
    match gpuledger::units::parse_size_spec(text).map_err(|e| e.to_string())? {
        gpuledger::units::SizeSpec::Bytes(b) => Ok(b),
        gpuledger::units::SizeSpec::Percent(_) => {
            Err(format!("{text:?}: give a size such as 16GiB"))
        }
    }
}
