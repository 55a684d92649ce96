//! One module per kernel interface. Nothing outside `sources` reads /proc or /sys.

pub mod cgroup;
pub mod cgroup_procs;
pub mod drm_devices;
pub mod drm_fdinfo;
pub mod k8s_pods;
pub mod kernel_events;
pub mod kernel_lines;
pub mod kernel_log;
pub mod kfd;
pub mod kmsg;
pub mod meminfo;
pub mod nvml;
pub mod packages;
pub mod pci_names;
pub mod proc_maps;
pub mod proc_pid;
pub mod sim_job;
pub mod system_info;
pub mod telemetry;
