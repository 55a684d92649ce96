//! Where each fact lives in a capture tree (docs/DESIGN.md, "Capture tree"). The paths are the
//! kernel's own, relative to the root, so a tree reads like the machine it came from; the two
//! gpuledger files (`gpuledger-capture.json`, `gpuledger-sim/job.json`) say so in their names.
//!
//! Readers (`sources/`, `sampler`, `guard`) and writers (`tree_writer`, `capture`, `sim`) name
//! their files here and nowhere else. The few that act on the machine itself rather than through
//! a root (`guard`'s cgroup, the live kernel log) take the same paths through [`live`].

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
/// `/proc/cmdline`: the kernel's command line.
pub const KERNEL_CMDLINE: &str = "proc/cmdline";
/// `/proc/sys/kernel/hostname`.
pub const HOSTNAME: &str = "proc/sys/kernel/hostname";
/// `/proc/driver/nvidia/version`: the NVIDIA kernel module's version banner.
pub const NVIDIA_VERSION: &str = "proc/driver/nvidia/version";
/// `/proc/modules`: the loaded kernel modules.
pub const MODULES: &str = "proc/modules";
/// `/proc/self/cgroup`: gpuledger's own cgroup (live only).
pub const SELF_CGROUP: &str = "proc/self/cgroup";
/// `/proc/self/mountinfo`: where the cgroup2 hierarchy is mounted (live only).
pub const SELF_MOUNTINFO: &str = "proc/self/mountinfo";
/// `/dev/dri/by-path`: a link per device named for its PCI path.
pub const DRI_BY_PATH: &str = "dev/dri/by-path";
/// The live kernel log device, read as a stream of records (not through a tree's root).
pub const LIVE_KMSG: &str = "/dev/kmsg";
/// What an fd link's text starts with for a DRM node (`/dev/dri/renderD128`).
pub const DRI_NODE_PREFIX: &str = "/dev/dri/";
/// What an fd link's text starts with for a compute accelerator node (`/dev/accel/accel0`).
pub const ACCEL_NODE_PREFIX: &str = "/dev/accel/";
/// An fd link's text for ROCm's KFD.
pub const KFD_NODE: &str = "/dev/kfd";
/// What an fd link's text starts with for an NVIDIA node (`/dev/nvidia0`, `/dev/nvidia-uvm`).
pub const NVIDIA_NODE_PREFIX: &str = "/dev/nvidia";
/// The mapping path of CUDA's pinned host memory in smaps (shared `/dev/zero` mappings).
pub const DEV_ZERO: &str = "/dev/zero";
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
/// The cgroup v2 hierarchy of a hybrid (v1 + v2) layout.
pub const CGROUP_UNIFIED: &str = "sys/fs/cgroup/unified";
/// A cgroup's member pids, one a line.
pub const CGROUP_PROCS: &str = "cgroup.procs";
/// A cgroup's `populated` and `frozen` flags.
pub const CGROUP_EVENTS: &str = "cgroup.events";
/// Writing `1` kills every process of a cgroup (Linux 5.14).
pub const CGROUP_KILL: &str = "cgroup.kill";
/// Writing `1` freezes a cgroup, `0` thaws it.
pub const CGROUP_FREEZE: &str = "cgroup.freeze";
/// The KFD topology's nodes (one directory per CPU or GPU node).
pub const KFD_NODES: &str = "sys/class/kfd/kfd/topology/nodes";
/// `dmem.capacity` at the cgroup root.
pub const DMEM_CAPACITY: &str = "sys/fs/cgroup/dmem.capacity";

/// `/proc`: a directory per process.
pub const PROC: &str = "proc";

/// `proc/<pid>`.
pub fn proc_dir(pid: u32) -> String {
    format!("{PROC}/{pid}")
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

/// `sys/dev/char/<major>:<minor>`: a link to the character device's sysfs directory.
pub fn char_device(major: u32, minor: u32) -> String {
    format!("sys/dev/char/{major}:{minor}")
}

/// `sys/module/<module>/version`.
pub fn module_version(module: &str) -> String {
    format!("sys/module/{module}/version")
}

/// `dev/dri/by-path/<name>`.
pub fn dri_by_path(name: &str) -> String {
    format!("{DRI_BY_PATH}/{name}")
}

/// `sys/class/<class>` (`drm`, `accel`).
pub fn class_dir(class: &str) -> String {
    format!("sys/class/{class}")
}

/// `proc/self/fd/<n>`: the link naming what gpuledger's own fd `n` refers to (live only).
pub fn self_fd(fd: i32) -> String {
    format!("{PROC}/self/fd/{fd}")
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

/// A cgroup's directory (`path` as in `/proc/<pid>/cgroup`, starting with `/`; the root `/` is
/// the mount itself).
pub fn cgroup_dir(path: &str) -> String {
    format!("{CGROUP_MOUNT}{}", if path == "/" { "" } else { path })
}

/// A file of a cgroup's directory (`dir` as [`cgroup_dir`] gives it).
pub fn cgroup_file(dir: &str, name: &str) -> String {
    format!("{dir}/{name}")
}

/// `sys/class/kfd/kfd/proc/<pid>`: one `vram_<gpu_id>` file per GPU the process uses.
pub fn kfd_proc_dir(pid: u32) -> String {
    format!("sys/class/kfd/kfd/proc/{pid}")
}

/// `sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>`.
pub fn kfd_vram(pid: u32, gpu_id: u32) -> String {
    format!("{}/vram_{gpu_id}", kfd_proc_dir(pid))
}

/// `sys/class/kfd/kfd/topology/nodes/<n>` (`n` a node number or a directory name).
pub fn kfd_node(n: impl std::fmt::Display) -> String {
    format!("{KFD_NODES}/{n}")
}

/// The live machine's path of a tree path (`proc/self/cgroup` → `/proc/self/cgroup`), for the
/// few readers and writers that act on the machine itself rather than through a root.
pub fn live(rel: &str) -> std::path::PathBuf {
    std::path::Path::new("/").join(rel)
}
