//! Who may send events: the processes of the job, told by the pid the kernel attached to each
//! datagram (`SCM_CREDENTIALS`, translated into gpuledger's pid namespace), never by the pid an
//! event carries. The job's processes are gpuledger's descendants (the command it started and
//! what that started; `guard` adopts the orphans as their subreaper); gpuledger itself and any
//! other process are not. A process found in the job stays in it for the run: its last events
//! (sent as it exits) are often read after it is gone and its parent is no longer known.

use crate::root::Root;
use crate::sources::proc_pid::read_ppid;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// How long a pid found outside the job is taken as outside (a pid reused after that is asked
/// again).
const KEEP_OUTSIDE: Duration = Duration::from_secs(1);
/// Pids remembered at most, each way; all of one way are forgotten when there would be more.
const CACHE_MAX: usize = 65_536;
/// Parents followed at most (a process tree deeper than this is not the job's).
const DEPTH_MAX: usize = 128;

/// Decides whether a sender is one of the job's processes.
#[derive(Debug)]
pub struct Senders {
    root: Root,
    /// gpuledger's own pid, the root of the job's tree.
    ancestor: u32,
    members: HashSet<u32>,
    outside: HashMap<u32, Instant>,
}

impl Senders {
    /// Senders that descend from this process, read on the live machine.
    pub fn descendants_of_self() -> Senders {
        Senders::descendants_of(Root::live(), std::process::id())
    }

    /// Senders that descend from `ancestor` (and are not it), their parents read under `root`.
    pub fn descendants_of(root: Root, ancestor: u32) -> Senders {
        Senders {
            root,
            ancestor,
            members: HashSet::new(),
            outside: HashMap::new(),
        }
    }

    /// Whether `pid` (the kernel's, 0 when the kernel gave none) is one of the job's processes.
    pub fn in_job(&mut self, pid: u32) -> bool {
        if self.members.contains(&pid) {
            return true;
        }
        if self
            .outside
            .get(&pid)
            .is_some_and(|at| at.elapsed() < KEEP_OUTSIDE)
        {
            return false;
        }
        let verdict = self.descends(pid);
        let full = |n: usize| n >= CACHE_MAX;
        if verdict {
            if full(self.members.len()) {
                self.members.clear();
            }
            self.members.insert(pid);
        } else {
            if full(self.outside.len()) {
                self.outside.clear();
            }
            self.outside.insert(pid, Instant::now());
        }
        verdict
    }

    /// Takes `pid` as one of the job's processes (a sender on the inherited socket pair, which
    /// only the job's processes hold); the kernel gave no pid (0) is still refused.
    pub fn admit(&mut self, pid: u32) -> bool {
        if pid == 0 || pid == self.ancestor {
            return false;
        }
        if self.members.len() >= CACHE_MAX {
            self.members.clear();
        }
        self.members.insert(pid);
        self.outside.remove(&pid);
        true
    }

    fn descends(&self, pid: u32) -> bool {
        if pid == 0 || pid == self.ancestor {
            return false;
        }
        let mut p = pid;
        for _ in 0..DEPTH_MAX {
            match read_ppid(&self.root, p) {
                Ok(Some(parent)) if parent == self.ancestor => return true,
                Ok(Some(parent)) if parent > 1 => p = parent,
                // init, a kernel thread, or a process that is gone.
                _ => return false,
            }
        }
        false
    }
}
