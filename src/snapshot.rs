//! The snapshot: what the sources read at one instant, as plain serialisable data. No logic.

use crate::sources::drm_devices::DeviceInfo;
use crate::sources::drm_fdinfo::FdInfo;
use crate::sources::proc_pid::GpuFd;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One sample of a machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Wall-clock time of the sample, ms since the Unix epoch.
    pub time_ms: u64,
    /// The root it was read from (`/`, a directory or an archive).
    pub root: String,
    /// Page size used for vmstat page counts.
    pub page_size: u64,
    /// `/proc/meminfo`, in bytes (`HugePages_*` are counts).
    pub meminfo: BTreeMap<String, u64>,
    /// GPU counters of `/proc/vmstat`, in pages.
    pub vmstat: BTreeMap<String, u64>,
    /// DRM and accel devices.
    pub devices: Vec<DeviceInfo>,
    /// Processes that hold GPU fds.
    pub processes: Vec<ProcessSample>,
    /// NVIDIA GPUs and their processes, from NVML (empty where NVML is absent).
    #[serde(default)]
    pub nvml: Vec<crate::sources::nvml::NvGpu>,
    /// The cgroups of the GPU processes.
    #[serde(default)]
    pub cgroups: Vec<crate::sources::cgroup::CgroupInfo>,
    /// Kubernetes pod namespace and name by pod uid, from the kubelet's log directory (read
    /// only when a GPU process runs in a pod).
    #[serde(default)]
    pub pod_names: BTreeMap<String, crate::sources::k8s_pods::PodName>,
    /// The root cgroup's `dmem.capacity` by region.
    #[serde(default)]
    pub dmem_capacity: BTreeMap<String, u64>,
    /// What the scan could and could not read.
    pub stats: ScanStats,
}

/// One process that holds at least one GPU fd.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    /// Pid as seen from the root's pid namespace.
    pub pid: u32,
    /// Parent pid.
    pub ppid: Option<u32>,
    /// `comm`.
    pub comm: String,
    /// `cmdline` arguments.
    pub cmdline: Vec<String>,
    /// Allow-listed environment (ranks, device masks, runtime knobs).
    pub env: BTreeMap<String, String>,
    /// `NSpid` from status: the pid in each nested namespace.
    pub nspid: Vec<u32>,
    /// DRM fds with their parsed fdinfo.
    pub drm: Vec<DrmFd>,
    /// KFD and NVIDIA fds (no fdinfo stats).
    pub other_gpu_fds: Vec<GpuFd>,
    /// Resident `/dev/zero` shared mappings (CUDA pinned host memory), for NVIDIA fd holders.
    #[serde(default)]
    pub pinned_shmem: Option<u64>,
    /// cgroup path (v2, else the v1 memory controller's).
    #[serde(default)]
    pub cgroup: Option<String>,
    /// KFD (ROCm compute) VRAM per PCI slot, for /dev/kfd holders.
    #[serde(default)]
    pub kfd_vram: Vec<(String, u64)>,
}

/// A DRM fd and what its fdinfo said.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DrmFd {
    /// The fd number.
    pub fd: u32,
    /// Link text (`/dev/dri/renderD128`).
    pub path: String,
    /// Minor name when known.
    pub minor: Option<String>,
    /// Parsed fdinfo.
    pub info: FdInfo,
}

/// Counts of what the scan met.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanStats {
    /// Processes listed in /proc.
    pub processes: u32,
    /// Processes whose fd table could not be read for lack of permission.
    pub unreadable: u32,
    /// Processes that exited during the scan.
    pub vanished: u32,
    /// Fd tables read in full this sample.
    pub fd_tables_read: u32,
    /// Malformed lines skipped in fdinfo, meminfo and vmstat.
    pub malformed_lines: u32,
    /// Devices reported asleep (runtime-suspended), sampled slowly.
    pub asleep_devices: Vec<String>,
    /// Files the scan met but could not use, the first [`MAX_LISTED_ISSUES`] of them.
    #[serde(default)]
    pub issues: Vec<ScanIssue>,
    /// How many such files there were in all, listed or not.
    #[serde(default)]
    pub issues_total: u32,
}

/// How many [`ScanIssue`]s a snapshot lists; the rest are only counted.
pub const MAX_LISTED_ISSUES: usize = 20;

/// A file under the root that was there but could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanIssue {
    /// The path relative to the root, e.g. `proc/4242/fdinfo/5`.
    pub path: String,
    /// Why it was not used.
    pub reason: IssueReason,
    /// The reason in words.
    pub detail: String,
}

/// Why a file was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueReason {
    /// A FIFO, socket, device node or directory where a regular file belongs.
    NotRegularFile,
    /// Over the root's read cap.
    TooLarge,
    /// A symlink whose target, resolved inside the root, does not exist.
    DanglingLink,
    /// Too many symlinks, or a symlink where a file belongs.
    LinkLoop,
    /// An fd entry that is not a symlink.
    NotASymlink,
    /// A file where a directory belongs.
    NotADirectory,
    /// A required file absent from a captured tree.
    Missing,
    /// The file was read but lacks what it must hold (meminfo without `MemTotal`).
    Malformed,
    /// Any other read error.
    Unreadable,
}
