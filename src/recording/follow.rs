//! Following a job's processes through a recording (`record --cgroup`, `record --slurm-job`):
//! the scope is re-read at every sample, the job's labels go into `meta` as `label.<name>`, and
//! the run ends when the job's cgroup is removed or empties after it had processes.

use super::{Recorder, RecordingError};
use crate::root::Root;
use crate::sampler::Scope;
use crate::sources::cgroup_procs::{user_name, Follow, Members};
use crate::sources::proc_pid;
use std::collections::{BTreeMap, BTreeSet};

/// The `meta` key prefix of a job label (`label.slurm_job`).
pub const LABEL_PREFIX: &str = "label.";

/// A job to follow, with the labels known before it starts (job id, node, partition, user).
#[derive(Debug, Clone)]
pub struct JobTarget {
    /// Its processes; `None` for every process (`record --all --label …`).
    pub follow: Option<Follow>,
    /// The command line to record (`--slurm-job 42`).
    pub command: Vec<String>,
    /// Labels by name (`slurm_job`, `node`, `partition`, `user`, `cgroup`).
    pub labels: BTreeMap<String, String>,
}

/// The follower's state between samples.
#[derive(Debug)]
pub(super) struct Follower {
    target: JobTarget,
    /// Whether the job has had a process yet: an empty cgroup ends the run only after that.
    seen: bool,
    steps: BTreeSet<String>,
}

impl Follower {
    /// Writes the known labels.
    pub(super) fn start(
        target: &JobTarget,
        rec: &mut Recorder,
    ) -> Result<Follower, RecordingError> {
        for (k, v) in &target.labels {
            rec.set_meta(&format!("{LABEL_PREFIX}{k}"), v)?;
        }
        Ok(Follower {
            target: target.clone(),
            seen: false,
            steps: BTreeSet::new(),
        })
    }

    /// The scope for the next sample, or `None` when the job has ended. New steps, and the user
    /// when no label gave it, are written as they are learnt.
    pub(super) fn refresh(
        &mut self,
        root: &Root,
        rec: &mut Recorder,
    ) -> Result<Option<Scope>, RecordingError> {
        let Some(follow) = &self.target.follow else {
            return Ok(Some(Scope::All));
        };
        let Some(m) = follow.members(root) else {
            rec.set_meta("note", "job ended: its cgroup was removed")?;
            return Ok(None);
        };
        if m.pids.is_empty() {
            if !self.seen {
                // A tree scope from the first sample on, so the sampler reads every parent pid.
                return Ok(Some(scope(m)));
            }
            rec.set_meta("note", "job ended: its last process left")?;
            return Ok(None);
        }
        self.seen = true;
        if !m.steps.is_subset(&self.steps) {
            self.steps.extend(m.steps.iter().cloned());
            let steps: Vec<&str> = self.steps.iter().map(String::as_str).collect();
            rec.set_meta(&format!("{LABEL_PREFIX}slurm_steps"), &steps.join(","))?;
        }
        if !self.target.labels.contains_key("user") && !m.descendants {
            if let Some(user) = job_user(root, &m.pids) {
                rec.set_meta(&format!("{LABEL_PREFIX}user"), &user)?;
                self.target.labels.insert("user".into(), user);
            }
        }
        Ok(Some(scope(m)))
    }
}

fn scope(m: Members) -> Scope {
    if m.descendants {
        Scope::Tree(m.pids)
    } else {
        Scope::Pids(m.pids)
    }
}

/// The owner of the job's processes: the first one not owned by root (slurmstepd runs as root
/// beside the user's tasks), else root.
fn job_user(root: &Root, pids: &BTreeSet<u32>) -> Option<String> {
    let uids: Vec<u32> = pids
        .iter()
        .filter_map(|&p| proc_pid::read_status(root, p).ok()?.uid)
        .collect();
    let uid = uids
        .iter()
        .copied()
        .find(|&u| u != 0)
        .or(uids.first().copied())?;
    Some(user_name(root, uid).unwrap_or_else(|| uid.to_string()))
}
