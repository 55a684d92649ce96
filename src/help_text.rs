//! The examples and exit statuses under each command's `--help` (clap's `after_help`), and the
//! one-line description of each `simulate` scenario. Lines stay under 80 columns unwrapped, so
//! a command line in an example is never broken.

use gpuledger::sim::Scenario;

/// Exit statuses every command shares; a command's own follow them.
macro_rules! exit_status {
    ($($own:literal),* $(,)?) => {
        concat!(
            "Exit status:\n",
            "  0  success\n",
            "  1  runtime error (the message names the file or value and the fix)\n",
            "  2  usage error (a bad or missing flag value, conflicting options)",
            $("\n", $own,)*
        )
    };
}

/// The top level: the snapshot and the way to each command.
pub const SNAPSHOT: &str = concat!(
    "Examples:\n",
    "  gpuledger                                  snapshot of this machine\n",
    "  gpuledger --root tests/fixtures/seed-2622  a captured machine\n",
    "  gpuledger --format csv --sort host         one row per process x device\n",
    "  gpuledger -l 2s --count 5 --json           5 snapshots as JSON Lines\n",
    "  gpuledger --fail-on critical               exit 3 on a critical finding\n",
    "  gpuledger demo                             the whole story, no GPU needed\n",
    "  gpuledger COMMAND --help                   a command's options\n\n",
    exit_status!("  3  a finding at or above --fail-on"),
);

/// `demo`.
pub const DEMO: &str = concat!(
    "Examples:\n",
    "  gpuledger demo\n",
    "  gpuledger demo -o demo && gpuledger show demo/A-pinned.ledger\n\n",
    exit_status!(),
);

/// `simulate`.
pub const SIMULATE: &str = concat!(
    "Examples:\n",
    "  gpuledger simulate ddp-peer-mirror -o sim && gpuledger --root sim\n",
    "  gpuledger simulate ddp-peer-mirror -o sim --ranks 8 --force\n",
    "  gpuledger simulate ddp-peer-mirror -o sim --ranks 4 --visible own --force\n",
    "  gpuledger simulate leak -o sim --live 60s &\n",
    "  gpuledger --root sim record --all --duration 30s -o leak.ledger\n\n",
    exit_status!(),
);

/// `record`.
pub const RECORD: &str = concat!(
    "Examples:\n",
    "  gpuledger record -- torchrun --nproc-per-node 2 train.py\n",
    "  gpuledger record -o run.ledger python3 train.py\n",
    "  gpuledger record --pid 4242 --duration 10m\n",
    "  gpuledger record --slurm-job \"$SLURM_JOB_ID\" -o job.ledger\n",
    "  gpuledger --root sim record --all --duration 30s\n\n",
    exit_status!("  A started command's own status otherwise (128+N when killed by signal N)."),
);

/// `guard`.
pub const GUARD: &str = concat!(
    "Examples:\n",
    "  gpuledger guard --max-driver-held 24GiB -- python3 train.py\n",
    "  gpuledger guard --min-available 15% --action none --pid 4242\n",
    "  gpuledger guard --max-job-host-gpu 8G --json -- ./job.sh\n\n",
    exit_status!(
        "  4  guard stopped the job",
        "  A started command's own status otherwise.",
    ),
);

/// `serve`.
pub const SERVE: &str = concat!(
    "Examples:\n",
    "  gpuledger serve\n",
    "  gpuledger serve --listen :9464 --interval 10s --series per-job\n",
    "  curl -s localhost:9464/metrics | promtool check metrics\n\n",
    exit_status!(),
);

/// `report`.
pub const REPORT: &str = concat!(
    "Examples:\n",
    "  gpuledger report > bug.md\n",
    "  gpuledger report bad.ledger good.ledger -o bug.md --redact\n",
    "  gpuledger report runs/ --template generic\n\n",
    exit_status!(),
);

/// `plot`.
pub const PLOT: &str = concat!(
    "Examples:\n",
    "  gpuledger plot run.ledger -o run.html\n",
    "  gpuledger plot bad.ledger good.ledger -o compare.html\n\n",
    exit_status!(),
);

/// `top`.
pub const TOP: &str = concat!(
    "Examples:\n",
    "  gpuledger top\n",
    "  gpuledger top --sort local --device card1\n",
    "  gpuledger --root sim top --interval 500ms\n\n",
    "Keys (? shows them in the view):\n",
    "  Up Down PgUp PgDn Home End  scroll the focused pane (hidden rows: +N more)\n",
    "  Tab Shift-Tab               focus devices, processes or findings\n",
    "  /                           filter processes by name, pid or command line\n",
    "  Esc                         clear the filter\n",
    "  g                           one row per process / per process and device\n",
    "  s                           sort: rank (the snapshot's), host, local, pid\n",
    "  v                           list every finding / fold many of one kind\n",
    "  q Ctrl-C                    quit\n\n",
    exit_status!("  (2 also without a terminal: use --loop or record --all)"),
);

/// `project`.
pub const PROJECT: &str = concat!(
    "Examples:\n",
    "  gpuledger project --ranks 8 --from run.ledger\n",
    "  gpuledger project --ranks 16 --vram-per-rank 20GiB --peers ring\n\n",
    exit_status!(),
);

/// `experiment`.
pub const EXPERIMENT: &str = concat!(
    "Examples:\n",
    "  gpuledger experiment --list-controls\n",
    "  gpuledger experiment -o exp -- torchrun --nproc-per-node 2 train.py\n",
    "  gpuledger experiment --controls single-device,nccl-no-p2p -- ./job.sh\n\n",
    exit_status!(),
);

/// `doctor`.
pub const DOCTOR: &str = concat!(
    "Examples:\n",
    "  gpuledger doctor\n",
    "  gpuledger doctor --vram-per-rank 20GiB -- torchrun --nproc-per-node 4 x.py\n",
    "  gpuledger doctor --fail-on warning --json\n\n",
    exit_status!("  3  a finding or known issue at or above --fail-on applies"),
);

/// `show`.
pub const SHOW: &str = concat!(
    "Examples:\n",
    "  gpuledger show run.ledger\n",
    "  gpuledger show run.ledger --pid 4001\n",
    "  gpuledger show runs/                    one job's recordings, one per node\n",
    "  gpuledger show run.ledger --json | jq .findings\n",
    "  gpuledger show run.ledger --format csv  peaks per process x device\n\n",
    exit_status!("  3  a finding at or above --fail-on (at its worst over time)"),
);

/// `diff`.
pub const DIFF: &str = concat!(
    "Examples:\n",
    "  gpuledger diff bad.ledger good.ledger\n",
    "  gpuledger diff node-runs-a/ node-runs-b/ --json\n",
    "  gpuledger diff bad.ledger good.ledger --format csv\n\n",
    exit_status!("  3  either run shows the peer-mirror pattern at or above --fail-on"),
);

/// `capture`.
pub const CAPTURE: &str = concat!(
    "Examples:\n",
    "  gpuledger capture\n",
    "  gpuledger capture -o box.tar.zst --pid 4242 --force\n",
    "  gpuledger --root box.tar.zst\n\n",
    exit_status!(),
);

/// `completions`.
pub const COMPLETIONS: &str = concat!(
    "Examples:\n",
    "  gpuledger completions bash > /etc/bash_completion.d/gpuledger\n",
    "  gpuledger completions zsh > ~/.zfunc/_gpuledger\n\n",
    exit_status!(),
);

/// `man`.
pub const MAN: &str = concat!(
    "Examples:\n",
    "  gpuledger man > gpuledger.1 && man -l gpuledger.1\n",
    "  gpuledger man --dir /usr/local/share/man/man1\n\n",
    exit_status!(),
);

/// What a `simulate` scenario models, for its possible-value help.
pub fn scenario(s: Scenario) -> &'static str {
    match s {
        Scenario::DdpPeerMirror => {
            "2 DDP ranks on 2 Intel GPUs (xe) whose 6 allocator segments are mirrored as GTT on \
             the peer card; --backing pinned (the default: EnableDeferBacking=1, the 26.22 \
             regression) pins them, --backing registered-only (EnableDeferBacking=0, 26.05) \
             does not"
        }
        Scenario::SingleGpu => "1 rank on 1 GPU, 4 segments, no peers: a healthy baseline",
        Scenario::Leak => "1 process whose host-class memory grows by 256 MiB steps to the end",
        Scenario::AmdgpuTp => {
            "2 tensor-parallel ranks on 2 amdgpu GPUs, 16 GiB segments, no mirror"
        }
        Scenario::DdpHealthy => {
            "DDP ranks with a context on every card and no peer registrations (a runtime \
             without the defect): healthy, nothing is mirrored"
        }
        Scenario::OneProcess => {
            "1 process over --ranks GPUs (intel/llvm#22873): each card's GTT mirrors the \
             allocations on the others"
        }
        Scenario::ApuDgpu => {
            "1 process on an integrated Intel GPU (host RAM is its memory) and --ranks \
             discrete ones (default 1): nothing is mirrored, the iGPU's memory is no blowup"
        }
        Scenario::XeAmdgpu => {
            "1 process over --ranks GPUs alternating xe and amdgpu, a working set on each: \
             nothing is mirrored"
        }
        Scenario::NvidiaDdp => {
            "DDP ranks on NVIDIA H200s: /dev/nvidia* fds on every card, usage from NVML \
             (nvml.json), 512 MiB of cudaHostAlloc each: nothing is mirrored"
        }
    }
}

/// `record`'s usage: clap's own lists every target on one line past 80 columns.
pub const RECORD_USAGE: &str = "gpuledger record [OPTIONS] [--] CMD [ARGS]...
       gpuledger record [OPTIONS] (--pid PID... | --all)
       gpuledger record [OPTIONS] (--cgroup PATH | --slurm-job ID)";

/// `guard`'s usage, for the same reason.
pub const GUARD_USAGE: &str = "gpuledger guard [OPTIONS] [--] CMD [ARGS]...
       gpuledger guard [OPTIONS] --pid PID...
       gpuledger guard [OPTIONS] (--cgroup PATH | --slurm-job ID)";

/// `project`'s usage, for the same reason.
pub const PROJECT_USAGE: &str = "gpuledger project [OPTIONS] --ranks N --from RECORDING
       gpuledger project [OPTIONS] --ranks N --vram-per-rank SIZE";
