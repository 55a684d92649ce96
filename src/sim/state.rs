//! The simulated machine at one moment: its processes, their GPU fds and what the kernel shows.

use super::truth::Truth;
use crate::sources::drm_devices::DeviceInfo;
use crate::sources::kmsg::KmsgRecord;
use crate::sources::nvml::NvGpu;
use crate::sources::sim_job::JobEnd;

/// One fd of a simulated process.
#[derive(Debug, Clone, PartialEq)]
pub struct SimFd {
    /// The fd number.
    pub fd: u32,
    /// What it links to (`/dev/dri/renderD128`, `/dev/nvidia0`).
    pub target: String,
    /// Its fdinfo text, for DRM fds.
    pub fdinfo: Option<String>,
}

/// One simulated process.
#[derive(Debug, Clone, PartialEq)]
pub struct SimProcess {
    /// Pid.
    pub pid: u32,
    /// Parent pid.
    pub ppid: u32,
    /// comm.
    pub comm: String,
    /// cmdline.
    pub cmdline: Vec<String>,
    /// Environment.
    pub env: Vec<(String, String)>,
    /// Its GPU fds.
    pub fds: Vec<SimFd>,
    /// `/proc/PID/smaps` text, where the process maps pinned host memory.
    pub smaps: Option<String>,
}

/// The machine at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct SimState {
    /// Seconds since the start of the run.
    pub t_s: f64,
    /// `/proc/meminfo` text.
    pub meminfo: String,
    /// `/proc/vmstat` text.
    pub vmstat: String,
    /// DRM devices.
    pub devices: Vec<DeviceInfo>,
    /// NVML's answers (`nvml.json`), on a machine with NVIDIA cards.
    pub nvml: Vec<NvGpu>,
    /// Processes.
    pub processes: Vec<SimProcess>,
    /// Whether the job still runs.
    pub job_running: bool,
    /// Whether the job died of host-memory exhaustion.
    pub died: bool,
    /// The kernel log so far (`dev/kmsg` records), oldest first.
    pub kernel_log: Vec<KmsgRecord>,
    /// How the job ended, once it has.
    pub job_end: Option<JobEnd>,
    /// What gpuledger must find in this state (`gpuledger-sim/truth.json`).
    pub truth: Truth,
}
