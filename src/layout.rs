//! Where each fact lives in a capture tree (docs/DESIGN.md, "Capture tree"). The paths are the
//! kernel's own, relative to the root, so a tree reads like the machine it came from; the two
//! gpuledger files (`gpuledger-capture.json`, `gpuledger-sim/job.json`) say so in their names.

/// Who wrote the tree, when, and with what version.
pub const MANIFEST: &str = "gpuledger-capture.json";
/// `/proc/meminfo`.
pub const MEMINFO: &str = "proc/meminfo";
/// `/proc/vmstat`.
pub const VMSTAT: &str = "proc/vmstat";
/// `/proc/version`.
pub const VERSION: &str = "proc/version";
/// `/proc/stat`; a capture keeps only its `btime` line (the boot's wall-clock time).
pub const PROC_STAT: &str = "proc/stat";
/// `/etc/os-release`, for `report`.
pub const OS_RELEASE: &str = "etc/os-release";
/// The kernel log as a regular file of `/dev/kmsg` records (`prio,seq,usec,flags;message`, one
/// record per line, continuation lines starting with a space), oldest first.
pub const KMSG: &str = "dev/kmsg";
/// How a simulated job ended (time, exit status, output tail); absent while it runs.
pub const SIM_JOB_END: &str = "gpuledger-sim/job.json";
/// The simulator's ground truth beside a simulated tree (`sim::truth`).
pub const SIM_TRUTH: &str = "gpuledger-sim/truth.json";
/// NVML's per-process facts as JSON (NVIDIA has no file the kernel shows them in).
pub const NVML: &str = "nvml.json";
/// cgroup v2 mount.
pub const CGROUP_MOUNT: &str = "sys/fs/cgroup";
/// `dmem.capacity` at the cgroup root.
pub const DMEM_CAPACITY: &str = "sys/fs/cgroup/dmem.capacity";

/// `proc/<pid>`.
pub fn proc_dir(pid: u32) -> String {
    format!("proc/{pid}")
}

/// `proc/<pid>/<name>` (`comm`, `cmdline`, `environ`, `status`, `stat`, `cgroup`, `smaps`).
pub fn proc_file(pid: u32, name: &str) -> String {
    format!("proc/{pid}/{name}")
}

/// `proc/<pid>/fd`.
pub fn fd_dir(pid: u32) -> String {
    format!("proc/{pid}/fd")
}

/// `proc/<pid>/fd/<n>`: a symlink whose text is what the kernel shows (`/dev/dri/renderD128`).
pub fn fd_link(pid: u32, fd: u32) -> String {
    format!("proc/{pid}/fd/{fd}")
}

/// `proc/<pid>/fdinfo/<n>`, verbatim.
pub fn fdinfo(pid: u32, fd: u32) -> String {
    format!("proc/{pid}/fdinfo/{fd}")
}

/// The PCI-style device directory a minor's `device` link points to.
pub fn device_dir(id: &str) -> String {
    format!("sys/devices/gpuledger/{id}")
}

/// The `device` link's text, relative to `sys/class/<class>/<minor>/`.
pub fn device_link_target(id: &str) -> String {
    format!("../../../devices/gpuledger/{id}")
}

/// `sys/class/<drm|accel>/<minor>/device`.
pub fn class_device_link(minor: &str) -> String {
    let class = if minor.starts_with("accel") {
        "accel"
    } else {
        "drm"
    };
    format!("sys/class/{class}/{minor}/device")
}

/// A cgroup's directory (`path` as in `/proc/<pid>/cgroup`, starting with `/`).
pub fn cgroup_dir(path: &str) -> String {
    format!("{CGROUP_MOUNT}{path}")
}

/// `sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>`.
pub fn kfd_vram(pid: u32, gpu_id: u32) -> String {
    format!("sys/class/kfd/kfd/proc/{pid}/vram_{gpu_id}")
}

/// `sys/class/kfd/kfd/topology/nodes/<n>`.
pub fn kfd_node(n: usize) -> String {
    format!("sys/class/kfd/kfd/topology/nodes/{n}")
}
