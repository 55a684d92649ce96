//! Control groups: the job a process belongs to, its memory limit, and the dmem controller.
//!
//! ref: Documentation/admin-guide/cgroup-v2.rst (`/proc/PID/cgroup` lines `0::/path`; memory
//! controller `memory.current`, `memory.max`; DMEM controller `dmem.capacity` on the root,
//! `dmem.current`/`dmem.max` elsewhere, nested-keyed `drm/<BDF>/<region> <bytes|max>`).
//! Kubernetes pod uids and container ids and Slurm job ids are read from the cgroup path, only
//! below the managers' own subtrees (the kubelet's `kubepods.slice/…/kubepods-…-pod<uid>.slice/
//! cri-containerd-<id>.scope` and cgroupfs `kubepods/…/pod<uid>/<id>`, slurmstepd's
//! `<slice>/slurmstepd.scope/job_<id>/step_…`).

use crate::layout;
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
    /// Where `job` was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_source: Option<LabelSource>,
}

/// The cgroup v2 path of a `/proc/PID/cgroup` text: its `0::` line.
/// ref: Documentation/admin-guide/cgroup-v2.rst ("Processes": `/proc/$PID/cgroup`).
pub fn parse_v2_path(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// The process's cgroup path: the v2 `0::` line, else the v1 memory controller's.
pub fn parse_proc_cgroup(text: &str) -> Option<String> {
    if let Some(v2) = parse_v2_path(text) {
        return Some(v2.to_string());
    }
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
    parse_proc_cgroup(&root.read_string(layout::proc_file(pid, "cgroup")).ok()?)
}

/// Where a job label was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelSource {
    /// slurmstepd's own cgroup subtree (`/<slice>/slurmstepd.scope/job_<id>`,
    /// `/slurm/[uid_<n>/]job_<id>`), which only root can create.
    SlurmCgroup,
    /// The process's own `SLURM_JOB_ID`, which whoever started it may have set to anything.
    Environment,
}

/// Pod, container and Slurm job from a cgroup path (and `SLURM_JOB_ID` when set).
///
/// Only the cgroup managers' own subtrees count: a Slurm job below slurmstepd's (or the legacy
/// `/slurm`) top-level cgroup, a pod and container below the kubelet's `kubepods`. Anyone with a
/// delegated subtree (`/user.slice/…`) can name a cgroup `job_4242` or `pod<uid>`; such names are
/// not labels. A job id from the environment is used only when the cgroup gives none, and
/// [`JobLabels::job_source`] says which it was.
pub fn labels(path: &str, slurm_env: Option<&str>) -> JobLabels {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut l = JobLabels::default();
    if let Some((pod, container)) = kubelet_labels(&parts) {
        l.pod = Some(pod);
        l.container = container;
    }
    if let Some(job) = slurm_job(&parts) {
        l.job = Some(job);
        l.job_source = Some(LabelSource::SlurmCgroup);
    } else if let Some(job) = slurm_env {
        l.job = Some(job.to_string());
        l.job_source = Some(LabelSource::Environment);
    }
    l
}

/// The job id of a path below slurmstepd's cgroup. ref: Slurm's cgroup_v2 plugin
/// (`<slice>/slurmstepd.scope/job_<id>/step_<id>/…`) and cgroup v1 (`slurm[_<node>]/uid_<n>/job_<id>`).
fn slurm_job(parts: &[&str]) -> Option<String> {
    let rest = match parts {
        [slice, "slurmstepd.scope", rest @ ..] if slice.ends_with(".slice") => rest,
        [top, rest @ ..] if *top == "slurm" || top.starts_with("slurm_") => match rest {
            [uid, rest @ ..] if uid.starts_with("uid_") => rest,
            _ => rest,
        },
        _ => return None,
    };
    rest.first()?
        .strip_prefix("job_")
        .filter(|j| !j.is_empty() && j.chars().all(|c| c.is_ascii_digit()))
        .map(String::from)
}

/// Pod uid and container id of a path below the kubelet's `kubepods` cgroup (systemd driver
/// `kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice/<runtime>-<id>.scope`,
/// cgroupfs driver `kubepods/<qos>/pod<uid>/<id>`; the QoS level is absent for Guaranteed pods).
fn kubelet_labels(parts: &[&str]) -> Option<(String, Option<String>)> {
    let rest = match parts {
        ["kubepods.slice" | "kubepods", rest @ ..] => rest,
        ["kubelet.slice", "kubelet-kubepods.slice", rest @ ..] => rest,
        _ => return None,
    };
    let rest = match rest {
        [qos, rest @ ..] if is_qos(qos) => rest,
        _ => rest,
    };
    let (pod, rest) = rest.split_first()?;
    let pod = pod_uid(pod)?;
    Some((pod, rest.first().and_then(|c| container_id(c))))
}

fn unit_name(part: &str) -> &str {
    part.trim_end_matches(".slice").trim_end_matches(".scope")
}

fn is_qos(part: &str) -> bool {
    let name = unit_name(part);
    ["burstable", "besteffort"]
        .iter()
        .any(|q| name == *q || name.strip_prefix("kubepods-") == Some(q))
}

fn pod_uid(part: &str) -> Option<String> {
    let name = unit_name(part);
    let at = name
        .find("-pod")
        .map(|i| i + 4)
        .or_else(|| name.starts_with("pod").then_some(3))?;
    let uid = name[at..].replace('_', "-");
    (uid.len() >= 32 && uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-')).then_some(uid)
}

fn container_id(part: &str) -> Option<String> {
    let name = unit_name(part);
    let id = name.rsplit('-').next().unwrap_or(name);
    (id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| id.to_string())
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
    let dir = layout::cgroup_dir(path);
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
    root.read_string(layout::DMEM_CAPACITY)
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
        let legacy = labels("/slurm/uid_1000/job_77/step_batch", Some("78"));
        assert_eq!(
            legacy.job.as_deref(),
            Some("77"),
            "the cgroup outranks the env"
        );
        assert_eq!(legacy.job_source, Some(LabelSource::SlurmCgroup));
        let env = labels("/user.slice/user-1000.slice/session-3.scope", Some("78"));
        assert_eq!(env.job.as_deref(), Some("78"));
        assert_eq!(env.job_source, Some(LabelSource::Environment));
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

    #[test]
    fn names_in_a_users_own_subtree_are_not_labels() {
        let pod = "pod3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b";
        let id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let user = "/user.slice/user-1000.slice/user@1000.service/app.slice";
        for path in [
            format!("{user}/job_4242"),
            format!("{user}/slurmstepd.scope/job_4242"),
            format!("{user}/slurm/uid_1000/job_4242"),
            format!("{user}/kubepods/{pod}/{id}"),
            format!("{user}/kubepods.slice/kubepods-burstable.slice/{pod}"),
            format!("/system.slice/slurmstepd.scope/job_7/step_0/user/task_0/kubepods/{pod}"),
        ] {
            let l = labels(&path, None);
            assert_eq!(l.pod, None, "{path}");
            assert_eq!(l.container, None, "{path}");
            assert!(l.job.is_none() || l.job.as_deref() == Some("7"), "{path}");
        }
        // Below the real job's cgroup a user may make `job_999`: the manager's level wins.
        let nested = labels(
            "/system.slice/slurmstepd.scope/job_7/step_0/user/job_999",
            None,
        );
        assert_eq!(nested.job.as_deref(), Some("7"));
    }

    #[test]
    fn guaranteed_pods_have_no_qos_level() {
        let l = labels(
            "/kubepods.slice/kubepods-pod3f2a1b4c_5d6e_7f80_9a1b_2c3d4e5f6a7b.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
            None,
        );
        assert!(l.pod.is_some() && l.container.is_some());
    }
}
