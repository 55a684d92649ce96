//! Control groups: the job a process belongs to, its memory limit, and the dmem controller.
//!
//! ref: Documentation/admin-guide/cgroup-v2.rst (`/proc/PID/cgroup` lines `0::/path`; memory
//! controller `memory.current`, `memory.max`; DMEM controller `dmem.capacity` on the root,
//! `dmem.current`/`dmem.max` elsewhere, nested-keyed `drm/<BDF>/<region> <bytes|max>`).
//! Kubernetes pod uids and container ids and Slurm job ids are read from the cgroup path (the
//! kubelet's `kubepods-…-pod<uid>.slice/cri-containerd-<id>.scope` and cgroupfs
//! `kubepods/…/pod<uid>/<id>`, slurmstepd's `…/job_<id>/step_…`).

use crate::root::Root;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Job labels derived from a cgroup path and the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobLabels {
    /// Kubernetes pod uid.
    pub pod: Option<String>,
    /// Container id (64 hex digits as the runtime names it).
    pub container: Option<String>,
    /// Slurm job id.
    pub job: Option<String>,
    /// Kubernetes namespace of the pod (from the kubelet's log directory).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Kubernetes pod name (the same source).
    #[serde(default)]
    pub pod_name: Option<String>,
}

/// The process's cgroup path: the v2 `0::` line, else the v1 memory controller's.
pub fn parse_proc_cgroup(text: &str) -> Option<String> {
    let mut v1 = None;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (id, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        if id == "0" && ctrl.is_empty() {
            return Some(path.to_string());
        }
        if ctrl.split(',').any(|c| c == "memory") {
            v1 = Some(path.to_string());
        }
    }
    v1
}

/// Reads `/proc/PID/cgroup`.
pub fn read_proc_cgroup(root: &Root, pid: u32) -> Option<String> {
    parse_proc_cgroup(&root.read_string(format!("proc/{pid}/cgroup")).ok()?)
}

/// Pod, container and Slurm job from a cgroup path (and `SLURM_JOB_ID` when set).
pub fn labels(path: &str, slurm_env: Option<&str>) -> JobLabels {
    let mut l = JobLabels {
        job: slurm_env.map(String::from),
        ..Default::default()
    };
    for part in path.split('/') {
        let part = part.trim_end_matches(".slice").trim_end_matches(".scope");
        if let Some(i) = part
            .find("-pod")
            .map(|i| i + 4)
            .or_else(|| part.starts_with("pod").then_some(3))
        {
            let uid = part[i..].replace('_', "-");
            if uid.len() >= 32 && uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                l.pod = Some(uid);
            }
        }
        let id = part.rsplit('-').next().unwrap_or(part);
        if id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit()) {
            l.container = Some(id.to_string());
        }
        if let Some(j) = part
            .strip_prefix("job_")
            .filter(|j| j.chars().all(|c| c.is_ascii_digit()))
        {
            l.job.get_or_insert_with(|| j.to_string());
        }
    }
    l
}

/// A cgroup's memory and dmem state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupInfo {
    /// Path below the cgroup root.
    pub path: String,
    /// `memory.current`.
    pub memory_current: Option<u64>,
    /// `memory.max` (None = `max`, unlimited).
    pub memory_max: Option<u64>,
    /// `dmem.current` by region (`drm/0000:03:00.0/vram0`).
    pub dmem_current: BTreeMap<String, u64>,
    /// `dmem.max` by region (`max` omitted).
    pub dmem_max: BTreeMap<String, u64>,
}

fn number(root: &Root, rel: &str) -> Option<u64> {
    root.read_string(rel).ok()?.trim().parse().ok()
}

/// Parses a nested-keyed dmem file (`drm/0000:03:00.0/vram0 1073741824`, `… max`).
pub fn parse_dmem(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_string(), f.next()?.parse().ok()?))
        })
        .collect()
}

/// Reads the memory and dmem files of `path` under `/sys/fs/cgroup`.
pub fn read_cgroup(root: &Root, path: &str) -> CgroupInfo {
    let dir = format!("sys/fs/cgroup{}", if path == "/" { "" } else { path });
    let dmem = |f: &str| {
        root.read_string(format!("{dir}/{f}"))
            .map(|t| parse_dmem(&t))
            .unwrap_or_default()
    };
    CgroupInfo {
        path: path.to_string(),
        memory_current: number(root, &format!("{dir}/memory.current")),
        memory_max: number(root, &format!("{dir}/memory.max")),
        dmem_current: dmem("dmem.current"),
        dmem_max: dmem("dmem.max"),
    }
}

/// The root cgroup's `dmem.capacity`.
pub fn read_dmem_capacity(root: &Root) -> BTreeMap<String, u64> {
    root.read_string("sys/fs/cgroup/dmem.capacity")
        .map(|t| parse_dmem(&t))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_systemd_and_cgroupfs_paths() {
        let p = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f2a1b4c_5d6e_7f80_9a1b_2c3d4e5f6a7b.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope";
        let l = labels(p, None);
        assert_eq!(
            l.pod.as_deref(),
            Some("3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b")
        );
        assert_eq!(
            l.container.as_deref(),
            Some("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
        );
        let c = labels("/kubepods/besteffort/pod3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", None);
        assert_eq!(
            c.pod.as_deref(),
            Some("3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b")
        );
        assert!(c.container.is_some());
    }

    #[test]
    fn slurm_paths_and_env() {
        assert_eq!(
            labels(
                "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0",
                None
            )
            .job
            .as_deref(),
            Some("4242")
        );
        assert_eq!(
            labels("/slurm/uid_1000/job_77/step_batch", Some("78"))
                .job
                .as_deref(),
            Some("78")
        );
        assert_eq!(
            labels("/user.slice/user-1000.slice/session-3.scope", None),
            JobLabels::default()
        );
    }

    #[test]
    fn proc_cgroup_v2_and_v1() {
        assert_eq!(
            parse_proc_cgroup("0::/system.slice/foo.service\n").as_deref(),
            Some("/system.slice/foo.service")
        );
        assert_eq!(
            parse_proc_cgroup("12:cpu,cpuacct:/a\n11:memory:/slurm/uid_1/job_5\n").as_deref(),
            Some("/slurm/uid_1/job_5")
        );
        assert_eq!(
            parse_dmem("drm/0000:03:00.0/vram0 1073741824\ndrm/0000:03:00.0/stolen max\n").len(),
            1
        );
    }
}
