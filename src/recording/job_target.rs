//! Which job `--cgroup` or `--slurm-job` names, found on the machine with its labels: what
//! `record` follows, and `guard` watches.

use super::follow::JobTarget;
use crate::root::Root;
use crate::sources::cgroup::labels;
use crate::sources::cgroup_procs::{find_slurm_job, resolve_cgroup, Follow, FollowError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long `--slurm-job` waits for the job to appear: a prolog runs before slurmstepd has
/// created the job's cgroup and processes.
pub const SLURM_WAIT: Duration = Duration::from_secs(60);

/// A job named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobSpec {
    /// `--cgroup PATH`: a path as /proc/PID/cgroup shows it, or the directory under
    /// /sys/fs/cgroup.
    Cgroup(String),
    /// `--slurm-job ID`.
    SlurmJob(String),
}

/// The job of `spec` with its labels; `None` when `stop` was raised while waiting (every `poll`)
/// for the Slurm job to appear. `env` reads the environment (a Slurm prolog's describes the job
/// when it is this job's).
pub fn job_target(
    root: &Root,
    spec: &JobSpec,
    poll: Duration,
    stop: &AtomicBool,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<JobTarget>, FollowError> {
    let mut labels = BTreeMap::new();
    if let Ok(u) = rustix::system::uname().nodename().to_str() {
        labels.insert("node".to_string(), u.to_string());
    }
    let (follow, command) = match spec {
        JobSpec::Cgroup(path) => {
            let dir = resolve_cgroup(root, path)?;
            labels.extend(labels_of(&dir));
            (
                Follow::Cgroup(dir),
                vec!["--cgroup".to_string(), path.clone()],
            )
        }
        JobSpec::SlurmJob(id) => {
            let Some(follow) = wait_for_slurm_job(root, id, poll, stop)? else {
                return Ok(None);
            };
            labels.insert("slurm_job".into(), id.clone());
            // The prolog's environment describes this job only when it is this job's.
            if env("SLURM_JOB_ID").is_some_and(|j| &j == id) {
                for (var, label) in [
                    ("SLURM_JOB_USER", "user"),
                    ("SLURM_JOB_PARTITION", "partition"),
                ] {
                    if let Some(v) = env(var).map(|v| v.trim().to_string()) {
                        if !v.is_empty() {
                            labels.insert(label.to_string(), v);
                        }
                    }
                }
            }
            (follow, vec!["--slurm-job".to_string(), id.clone()])
        }
    };
    labels.insert("followed".into(), follow.describe());
    Ok(Some(JobTarget {
        follow: Some(follow),
        command,
        labels,
    }))
}

/// Pod, container and Slurm job read from the cgroup's path.
fn labels_of(dir: &str) -> BTreeMap<String, String> {
    // Labels are read from the path below the hierarchy's root, where the managers' own
    // subtrees start (`/system.slice/slurmstepd.scope/…`).
    let below = ["sys/fs/cgroup/unified", "sys/fs/cgroup"]
        .iter()
        .find_map(|m| dir.strip_prefix(m))
        .unwrap_or(dir);
    let l = labels(below, None);
    [
        ("pod", l.pod),
        ("container", l.container),
        ("slurm_job", l.job),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k.to_string(), v?)))
    .collect()
}

/// Finds the Slurm job, retrying every `poll` for [`SLURM_WAIT`]; `None` when stopped first.
fn wait_for_slurm_job(
    root: &Root,
    id: &str,
    poll: Duration,
    stop: &AtomicBool,
) -> Result<Option<Follow>, FollowError> {
    let start = Instant::now();
    loop {
        match find_slurm_job(root, id) {
            Ok(f) => return Ok(Some(f)),
            Err(e) if start.elapsed() >= SLURM_WAIT || !root.is_live() => return Err(e),
            Err(_) if stop.load(Ordering::SeqCst) => return Ok(None),
            Err(_) => std::thread::sleep(poll.max(Duration::from_millis(200))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_from_below_the_hierarchys_root() {
        let l = labels_of("sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/step_0");
        assert_eq!(l.get("slurm_job").map(String::as_str), Some("42"));
    }

    #[test]
    fn a_missing_cgroup_is_an_error_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::open(dir.path()).unwrap();
        let never = AtomicBool::new(false);
        let spec = JobSpec::Cgroup("/nope.slice".into());
        let err = job_target(&root, &spec, Duration::ZERO, &never, |_| None).unwrap_err();
        assert!(err.to_string().contains("below /sys/fs/cgroup"), "{err}");
    }
}
