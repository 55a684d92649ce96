//! A cgroup v2 of the guarded job's own, so that stopping the job reaches every process it
//! started, including those that left its process group with `setsid` or a double fork.
//!
//! The cgroup is created as a child of gpuledger's own cgroup (`/proc/self/cgroup`), because that
//! is the one place an unprivileged user can be allowed to write (a systemd-delegated scope) and
//! because moving a process needs write access to the common ancestor of its old and new cgroup:
//! here that is gpuledger's own cgroup. A cgroup that holds processes (gpuledger's) has no
//! controllers enabled for its children, so the new child accepts processes.
//!
//! The job is born inside: gpuledger moves itself into the new cgroup, forks, and moves back. A
//! child moved in after it started could fork before the move; this way no process of the job
//! ever runs outside, and no code runs between fork and exec.
//!
//! The job is killed with `cgroup.kill` (Linux 5.14), else by freezing the cgroup and signalling
//! every member. gpuledger never writes `cgroup.kill` while it is itself a member.
//! ref: Documentation/admin-guide/cgroup-v2.rst ("Organizing Processes", "cgroup.kill").

use crate::layout::{self, CGROUP_EVENTS, CGROUP_FREEZE, CGROUP_KILL, CGROUP_PROCS};
use crate::sources::cgroup::parse_v2_path;
use crate::sources::cgroup_procs::parse_procs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How deep below the job's cgroup the cgroups it makes are looked into.
const MAX_DEPTH: usize = 32;

/// Why the job could not be given a cgroup of its own.
#[derive(Debug, Error)]
pub enum ContainError {
    /// No cgroup2 file system is mounted.
    #[error("no cgroup v2 hierarchy is mounted (none in /proc/self/mountinfo)")]
    NoHierarchy,
    /// `/proc/self/cgroup` has no `0::` line, or it is outside the mounted hierarchy.
    #[error("gpuledger's own cgroup v2 path is unknown ({0:?} in /proc/self/cgroup)")]
    OwnPath(String),
    /// A cgroup file could not be read or written.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// What was attempted.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> ContainError + 'a {
    move |source| ContainError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// The guarded job's cgroup; removed when dropped (after its processes are gone).
#[derive(Debug)]
pub struct JobCgroup {
    dir: PathBuf,
    parent: PathBuf,
    /// Path below the hierarchy's root, as `/proc/PID/cgroup` shows it.
    path: String,
}

impl JobCgroup {
    /// Creates `gpuledger-guard-<pid>` below gpuledger's own cgroup.
    pub fn create() -> Result<JobCgroup, ContainError> {
        let path = layout::live(layout::SELF_MOUNTINFO);
        let mountinfo = std::fs::read_to_string(&path).map_err(io_err("read", &path))?;
        let (mount_root, mount_point) =
            cgroup2_mount(&mountinfo).ok_or(ContainError::NoHierarchy)?;
        let own = own_path()?;
        let below = own
            .strip_prefix(mount_root.trim_end_matches('/'))
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .ok_or_else(|| ContainError::OwnPath(own.clone()))?;
        let parent = PathBuf::from(&mount_point).join(below.trim_start_matches('/'));
        let name = format!("gpuledger-guard-{}", std::process::id());
        let dir = parent.join(&name);
        std::fs::create_dir(&dir).map_err(io_err("create", &dir))?;
        let cg = JobCgroup {
            dir,
            parent,
            path: format!("{}/{name}", own.trim_end_matches('/')),
        };
        // Prove now, before anything is started, that processes can be moved in and back out.
        cg.run_inside(|| ())?;
        Ok(cg)
    }

    /// Runs `spawn` with gpuledger inside the job's cgroup, so a process it forks starts there.
    pub fn run_inside<T>(&self, spawn: impl FnOnce() -> T) -> Result<T, ContainError> {
        let me = std::process::id().to_string();
        let procs = self.dir.join(CGROUP_PROCS);
        std::fs::write(&procs, &me).map_err(io_err("move gpuledger into", &procs))?;
        let spawned = spawn();
        let back = self.parent.join(CGROUP_PROCS);
        std::fs::write(&back, &me).map_err(io_err("move gpuledger back to", &back))?;
        Ok(spawned)
    }

    /// The pids in the cgroup and in the cgroups the job made below it, now (an unreadable list
    /// reads as empty).
    pub fn pids(&self) -> Vec<u32> {
        self.tree()
            .iter()
            .filter_map(|dir| std::fs::read_to_string(dir.join(CGROUP_PROCS)).ok())
            .flat_map(|t| parse_procs(&t))
            .collect()
    }

    /// The cgroup's directory and those below it, parents before children.
    fn tree(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut todo = vec![(self.dir.clone(), 0)];
        while let Some((dir, depth)) = todo.pop() {
            if depth < MAX_DEPTH {
                let subdirs = std::fs::read_dir(&dir).into_iter().flatten().flatten();
                for e in subdirs.filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
                    todo.push((e.path(), depth + 1));
                }
            }
            out.push(dir);
        }
        out
    }

    /// Whether the cgroup or one below it holds a process (`populated` of `cgroup.events`);
    /// `None` when unreadable.
    pub fn populated(&self) -> Option<bool> {
        let events = std::fs::read_to_string(self.dir.join(CGROUP_EVENTS)).ok()?;
        events
            .lines()
            .find_map(|l| l.strip_prefix("populated "))
            .map(|v| v.trim() == "1")
    }

    /// Whether `pid` is in this cgroup or one below it (read from its `/proc/PID/cgroup`).
    pub fn contains(&self, pid: u32) -> bool {
        cgroup_of(pid).is_some_and(|p| {
            p.strip_prefix(&self.path)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    /// Kills every process in the cgroup: `cgroup.kill`, else freeze and SIGKILL each member.
    /// Returns whether `cgroup.kill` did it.
    pub fn kill(&self) -> bool {
        if self.contains(std::process::id()) {
            // Only possible if moving back out failed; killing the cgroup would kill guard.
            self.kill_each();
            return false;
        }
        if std::fs::write(self.dir.join(CGROUP_KILL), "1").is_ok() {
            return true;
        }
        let _ = std::fs::write(self.dir.join(CGROUP_FREEZE), "1");
        self.kill_each();
        let _ = std::fs::write(self.dir.join(CGROUP_FREEZE), "0");
        false
    }

    /// SIGKILL to every member, in rounds, until none is left (members may be forking).
    fn kill_each(&self) {
        let me = std::process::id();
        for _ in 0..20 {
            let pids: Vec<u32> = self.pids().into_iter().filter(|&p| p != me).collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                if let Some(fd) = crate::guard::open_member(self, pid) {
                    let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for JobCgroup {
    fn drop(&mut self) {
        // Killed processes leave the cgroup as they finish exiting; rmdir succeeds once empty.
        // Cgroups the job made below its own go first, children before parents.
        let deadline = Instant::now() + Duration::from_secs(2);
        for dir in self.tree().iter().rev() {
            while std::fs::remove_dir(dir).is_err() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// The cgroup v2 path of `pid` (the `0::` line of `/proc/PID/cgroup`).
pub fn cgroup_of(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(layout::live(&layout::proc_file(pid, "cgroup"))).ok()?;
    parse_v2_path(&text).map(String::from)
}

/// gpuledger's own cgroup v2 path (the `0::` line of `/proc/self/cgroup`).
fn own_path() -> Result<String, ContainError> {
    let path = layout::live(layout::SELF_CGROUP);
    let text = std::fs::read_to_string(&path).map_err(io_err("read", &path))?;
    parse_v2_path(&text)
        .filter(|p| p.starts_with('/') && !p.ends_with(" (deleted)"))
        .map(String::from)
        .ok_or_else(|| ContainError::OwnPath(text.trim().to_string()))
}

/// (root inside the hierarchy, mount point) of the first cgroup2 mount in `mountinfo`.
/// ref: Documentation/filesystems/proc.rst, "/proc/<pid>/mountinfo".
fn cgroup2_mount(mountinfo: &str) -> Option<(String, String)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let f: Vec<&str> = left.split_whitespace().collect();
        Some((unescape(f.get(3)?), unescape(f.get(4)?)))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let mut out = Vec::with_capacity(field.len());
    let b = field.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).and_then(|d| {
            let s = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(s, 8).ok()
        });
        match (b[i], octal) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_in_hybrid_and_unified_layouts() {
        let hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(("/".into(), "/sys/fs/cgroup/unified".into()))
        );
        let bound = "50 40 0:27 /user.slice /mnt/my\\040cg rw shared:9 - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(bound),
            Some(("/user.slice".into(), "/mnt/my cg".into()))
        );
        let v1_only: String = hybrid.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert_eq!(cgroup2_mount(&v1_only), None);
    }
}
