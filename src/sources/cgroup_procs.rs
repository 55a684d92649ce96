//! The processes of a job as they come and go: every pid in a cgroup subtree (`cgroup.procs` of
//! the cgroup and of each cgroup below it), the cgroup of a Slurm job, and, where Slurm tracks a
//! job without cgroups (`ProctrackType=proctrack/linuxproc`), the job's `slurmstepd` processes.
//!
//! ref: Documentation/admin-guide/cgroup-v2.rst ("Organizing Processes": `cgroup.procs` lists the
//! pids of that cgroup only, not of its descendants). Slurm's cgroup v2 layout (slurm
//! `src/plugins/cgroup/v2/cgroup_v2.c`): `…/system.slice/slurmstepd.scope/job_<id>/step_<n>/{slurm,
//! user/task_<i>}`; cgroup v1: `<controller>/slurm/uid_<uid>/job_<id>/step_<n>`. slurmstepd names
//! itself `slurmstepd: [<job>.<step>]` (slurm `src/slurmd/slurmstepd/slurmstepd.c`).

use crate::layout::{self, CGROUP_MOUNT, CGROUP_PROCS};
use crate::root::Root;
use crate::sources::proc_pid;
use std::collections::{BTreeSet, VecDeque};
use std::io;
use std::path::Path;
use thiserror::Error;

/// Levels below [`CGROUP_MOUNT`] that the search for a Slurm job looks at (v2 job directories are 3
/// or 4 deep: `[unified/]system.slice/slurmstepd.scope/job_<id>`; v1 ones 4).
const SEARCH_DEPTH: usize = 5;
/// Directories the search visits at most (a node with many pods has thousands of cgroups).
const SEARCH_DIRS: usize = 20_000;
/// Levels below the followed cgroup that are walked (Slurm uses 3: `step_0/user/task_0`).
const WALK_DEPTH: usize = 16;

/// A job's processes could not be found.
#[derive(Debug, Error)]
pub enum FollowError {
    /// `--cgroup` names no cgroup directory.
    #[error("no cgroup directory {path:?} (tried {tried}); give a path below /sys/fs/cgroup as /proc/PID/cgroup shows it, or the directory itself")]
    NoCgroup {
        /// What the user gave.
        path: String,
        /// The directories tried.
        tried: String,
    },
    /// No cgroup and no slurmstepd of the job.
    #[error("no cgroup named job_{job} within {SEARCH_DEPTH} levels below /sys/fs/cgroup ({dirs} directories searched, e.g. /sys/fs/cgroup/system.slice/slurmstepd.scope/job_{job} for cgroup v2 or /sys/fs/cgroup/<controller>/slurm/uid_<uid>/job_{job} for v1) and no process named \"slurmstepd: [{job}.<step>]\"; is Slurm job {job} running on this node?")]
    NoSlurmJob {
        /// The job id.
        job: String,
        /// Directories searched.
        dirs: usize,
    },
}

/// What is followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Follow {
    /// Every process in this cgroup and below (a directory below the root, `sys/fs/cgroup/…`).
    Cgroup(String),
    /// The descendants of the job's `slurmstepd` processes (Slurm without cgroup tracking).
    SlurmSteps(String),
}

/// The job's processes now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Members {
    /// Pids: the members themselves, or with [`Members::descendants`] the roots of their trees.
    pub pids: BTreeSet<u32>,
    /// Whether the pids' descendants belong to the job too.
    pub descendants: bool,
    /// Slurm steps seen (`batch`, `extern`, `0`, …).
    pub steps: BTreeSet<String>,
}

impl Follow {
    /// The members now; `None` once the cgroup is removed.
    pub fn members(&self, root: &Root) -> Option<Members> {
        match self {
            Follow::Cgroup(dir) => {
                let pids = subtree_procs(root, dir).ok()?;
                let steps = root
                    .list_dir(dir)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|n| n.to_str()?.strip_prefix("step_").map(String::from))
                    .collect();
                Some(Members {
                    pids,
                    descendants: false,
                    steps,
                })
            }
            Follow::SlurmSteps(job) => {
                let stepds = slurm_stepds(root, job);
                Some(Members {
                    pids: stepds.iter().map(|(p, _)| *p).collect(),
                    descendants: true,
                    steps: stepds.into_iter().map(|(_, s)| s).collect(),
                })
            }
        }
    }

    /// The cgroup directory (as the user would type it) or the Slurm job, for labels.
    pub fn describe(&self) -> String {
        match self {
            Follow::Cgroup(dir) => format!("/{dir}"),
            Follow::SlurmSteps(job) => format!("slurmstepd: [{job}.*]"),
        }
    }
}

/// The directory below the root of the cgroup `path`: `/sys/fs/cgroup/…` itself, or a path as
/// `/proc/PID/cgroup` shows it, below the v2 mount (`/sys/fs/cgroup` or, on hybrid systems,
/// `/sys/fs/cgroup/unified`).
pub fn resolve_cgroup(root: &Root, path: &str) -> Result<String, FollowError> {
    let trimmed = path.trim_matches('/');
    let candidates: Vec<String> =
        if trimmed == CGROUP_MOUNT || trimmed.starts_with(&format!("{CGROUP_MOUNT}/")) {
            vec![trimmed.to_string()]
        } else {
            [CGROUP_MOUNT, layout::CGROUP_UNIFIED]
                .iter()
                .map(|m| format!("{m}/{trimmed}").trim_end_matches('/').to_string())
                .collect()
        };
    candidates
        .iter()
        .find(|c| {
            root.read_string(layout::cgroup_file(c, CGROUP_PROCS))
                .is_ok()
        })
        .cloned()
        .ok_or_else(|| FollowError::NoCgroup {
            path: path.to_string(),
            tried: candidates
                .iter()
                .map(|c| format!("/{c}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Every pid in `dir`'s `cgroup.procs` and in those of the cgroups below it. An error only when
/// `dir` itself cannot be read (removed); a child removed during the walk is skipped.
pub fn subtree_procs(root: &Root, dir: &str) -> io::Result<BTreeSet<u32>> {
    let mut pids = parse_procs(&root.read_string(layout::cgroup_file(dir, CGROUP_PROCS))?);
    let mut pending: VecDeque<(String, usize)> = VecDeque::from([(dir.to_string(), 0)]);
    while let Some((d, depth)) = pending.pop_front() {
        if depth >= WALK_DEPTH {
            continue;
        }
        for child in child_dirs(root, &d) {
            if let Ok(text) = root.read_string(layout::cgroup_file(&child, CGROUP_PROCS)) {
                pids.extend(parse_procs(&text));
                pending.push_back((child, depth + 1));
            }
        }
    }
    Ok(pids)
}

/// Pids of a `cgroup.procs` file, one a line.
pub fn parse_procs(text: &str) -> BTreeSet<u32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Subdirectories of `dir`, told from the interface files by the type `getdents` reports, so
/// that a walk costs one listing per cgroup: over 200 cgroups holding 100 processes a sample
/// costs 8 ms of CPU against 3 ms for `--pid` of the same processes (debug build), where trying
/// to list every interface file cost 25 ms.
fn child_dirs(root: &Root, dir: &str) -> Vec<String> {
    let Ok(path) = root.resolve(Path::new(dir), true) else {
        return Vec::new();
    };
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .map(|n| format!("{dir}/{n}"))
        .collect()
}

/// Finds Slurm job `job`: its cgroup (a v2 one, with `cgroup.controllers`, before v1's freezer
/// one, before any other), else its slurmstepd processes.
pub fn find_slurm_job(root: &Root, job: &str) -> Result<Follow, FollowError> {
    let name = format!("job_{job}");
    let mut found: Vec<String> = Vec::new();
    let mut dirs = 0;
    let mut pending: VecDeque<(String, usize)> = VecDeque::from([(CGROUP_MOUNT.to_string(), 0)]);
    while let Some((d, depth)) = pending.pop_front() {
        dirs += 1;
        if dirs > SEARCH_DIRS {
            break;
        }
        for child in child_dirs(root, &d) {
            if child.rsplit('/').next() == Some(name.as_str()) {
                found.push(child);
            } else if depth + 1 < SEARCH_DEPTH {
                pending.push_back((child, depth + 1));
            }
        }
    }
    // proctrack/cgroup tracks v1 jobs in the freezer hierarchy; the others may lack processes.
    let v2 = found
        .iter()
        .find(|d| root.read_string(format!("{d}/cgroup.controllers")).is_ok());
    let freezer = found.iter().find(|d| d.contains("/freezer/"));
    if let Some(d) = v2.or(freezer).or(found.first()) {
        return Ok(Follow::Cgroup(d.clone()));
    }
    if !slurm_stepds(root, job).is_empty() {
        return Ok(Follow::SlurmSteps(job.to_string()));
    }
    Err(FollowError::NoSlurmJob {
        job: job.to_string(),
        dirs,
    })
}

/// The job's slurmstepd processes with their step names.
fn slurm_stepds(root: &Root, job: &str) -> Vec<(u32, String)> {
    proc_pid::list_pids(root)
        .unwrap_or_default()
        .into_iter()
        .filter(|&p| proc_pid::read_comm(root, p).is_ok_and(|c| c == "slurmstepd"))
        .filter_map(|p| {
            let argv = proc_pid::read_cmdline(root, p).ok()?;
            Some((p, stepd_step(&argv.join(" "), job)?))
        })
        .collect()
}

/// The step of a slurmstepd whose title is `slurmstepd: [<job>.<step>]`, when it is `job`'s.
pub fn stepd_step(title: &str, job: &str) -> Option<String> {
    let inner = title
        .trim()
        .strip_prefix("slurmstepd: [")?
        .strip_suffix(']')?;
    let (j, step) = inner.split_once('.')?;
    (j == job && !step.is_empty()).then(|| step.to_string())
}

/// The user name of `uid` from `etc/passwd` under the root.
pub fn user_name(root: &Root, uid: u32) -> Option<String> {
    let text = root.read_string("etc/passwd").ok()?;
    passwd_name(&text, uid)
}

/// The name on the first `etc/passwd` line (`name:x:uid:…`) with this uid.
pub fn passwd_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let id: u32 = f.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, text).expect("write");
        }
        let root = Root::open(dir.path()).expect("root");
        (dir, root)
    }

    #[test]
    fn walks_the_whole_subtree_and_lists_steps() {
        let job = "sys/fs/cgroup/system.slice/slurmstepd.scope/job_42";
        let (_d, root) = tree(&[
            (&format!("{job}/cgroup.procs"), ""),
            (&format!("{job}/cgroup.controllers"), "cpu memory"),
            (&format!("{job}/step_0/cgroup.procs"), ""),
            (&format!("{job}/step_0/slurm/cgroup.procs"), "100\n"),
            (&format!("{job}/step_0/user/cgroup.procs"), ""),
            (
                &format!("{job}/step_0/user/task_0/cgroup.procs"),
                "101\n102\n",
            ),
            (&format!("{job}/step_batch/cgroup.procs"), ""),
            (&format!("{job}/step_batch/user/cgroup.procs"), ""),
            (&format!("{job}/step_batch/user/task_0/cgroup.procs"), "7\n"),
            ("sys/fs/cgroup/other/cgroup.procs", "555\n"),
        ]);
        let follow = find_slurm_job(&root, "42").expect("found");
        assert_eq!(follow, Follow::Cgroup(job.to_string()));
        let m = follow.members(&root).expect("members");
        assert_eq!(m.pids, [7, 100, 101, 102].into());
        assert_eq!(m.steps, ["0".to_string(), "batch".to_string()].into());
        let (_d1, v1) = tree(&[
            ("sys/fs/cgroup/cpuset/slurm/uid_0/job_5/cgroup.procs", ""),
            (
                "sys/fs/cgroup/freezer/slurm/uid_0/job_5/cgroup.procs",
                "9\n",
            ),
        ]);
        assert_eq!(
            find_slurm_job(&v1, "5").expect("v1"),
            Follow::Cgroup("sys/fs/cgroup/freezer/slurm/uid_0/job_5".into())
        );
        assert!(matches!(
            find_slurm_job(&root, "4"),
            Err(FollowError::NoSlurmJob { .. })
        ));
    }

    #[test]
    fn resolves_paths_as_proc_shows_them_and_on_hybrid_mounts() {
        let (_d, root) = tree(&[("sys/fs/cgroup/unified/gl/a/cgroup.procs", "1\n")]);
        assert_eq!(
            resolve_cgroup(&root, "/gl/a").expect("below unified"),
            "sys/fs/cgroup/unified/gl/a"
        );
        assert_eq!(
            resolve_cgroup(&root, "/sys/fs/cgroup/unified/gl/a/").expect("itself"),
            "sys/fs/cgroup/unified/gl/a"
        );
        let e = resolve_cgroup(&root, "/gl/missing").expect_err("missing");
        assert!(e.to_string().contains("/sys/fs/cgroup/unified/gl/missing"));
    }

    #[test]
    fn stepd_titles_passwd_and_procs() {
        assert_eq!(
            stepd_step("slurmstepd: [12.batch]", "12").as_deref(),
            Some("batch")
        );
        assert_eq!(stepd_step("slurmstepd: [12.0]", "1"), None);
        assert_eq!(stepd_step("slurmstepd: [12]", "12"), None);
        assert_eq!(stepd_step("slurmd", "12"), None);
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\nbad line\nalice:x:1000:1000::/home/a:/bin/sh\n";
        assert_eq!(passwd_name(passwd, 1000).as_deref(), Some("alice"));
        assert_eq!(passwd_name(passwd, 7), None);
        assert_eq!(parse_procs("1\n\n 2\nx\n"), [1, 2].into());
    }
}
