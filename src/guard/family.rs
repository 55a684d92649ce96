//! The guarded job's processes as the process table shows them: every descendant of a held
//! process, and every member of the job's process group. A process that leaves the job's cgroup
//! (it wrote its pid into a cgroup it may write) or its session is still one of these, so guard
//! keeps holding and signalling it.
//!
//! Guard makes itself the job's child subreaper ([`adopt_orphans`]): a descendant whose parent
//! exits is re-parented to guard instead of init, so it stays in guard's tree.
//!
//! ref: proc(5) `/proc/PID/stat` (field 4 ppid, field 5 pgrp, after the parenthesised comm);
//! prctl(2) `PR_SET_CHILD_SUBREAPER`.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

/// One process of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    /// Its pid.
    pub pid: u32,
    /// Its parent's pid.
    pub ppid: u32,
    /// Its process group.
    pub pgrp: u32,
    /// Its start time, clock ticks after boot (field 22; 0 where the line is cut short).
    pub start: u64,
    /// What its name says it is to a terminal multiplexer.
    pub mux: MuxRole,
}

/// A terminal multiplexer whose server, once running, starts what its clients ask for as its
/// own children: outside the asking job's tree, cgroup and process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Multiplexer {
    /// tmux (its server names itself `tmux: server`).
    Tmux,
    /// GNU screen (client and server are both `screen`; the server's argv says `SCREEN`).
    Screen,
}

impl Multiplexer {
    /// The command users type.
    pub fn as_str(self) -> &'static str {
        match self {
            Multiplexer::Tmux => "tmux",
            Multiplexer::Screen => "screen",
        }
    }
}

/// A process's part in a multiplexer, from its comm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MuxRole {
    /// Not a multiplexer.
    #[default]
    None,
    /// A client (it may ask a running server to start processes).
    Client(Multiplexer),
    /// A server (what it starts is its child). A screen process is both until its argv is read.
    Server(Multiplexer),
}

impl MuxRole {
    /// The role a comm (at most 15 bytes, as the kernel keeps it) names.
    pub fn of_comm(comm: &str) -> MuxRole {
        match comm {
            "tmux" => MuxRole::Client(Multiplexer::Tmux),
            "tmux: server" => MuxRole::Server(Multiplexer::Tmux),
            "screen" | "SCREEN" => MuxRole::Server(Multiplexer::Screen),
            _ => MuxRole::None,
        }
    }

    /// The multiplexer a job process that has this role could hand work to.
    pub fn client(self) -> Option<Multiplexer> {
        match self {
            MuxRole::Client(m) => Some(m),
            // A screen command in the job is its client (and a server the job started is the
            // job's own child, so what it starts stays in the job's tree).
            MuxRole::Server(Multiplexer::Screen) => Some(Multiplexer::Screen),
            _ => None,
        }
    }
}

/// Makes guard the subreaper of the processes it starts.
pub fn adopt_orphans() -> io::Result<()> {
    Ok(rustix::process::set_child_subreaper(Some(
        rustix::process::getpid(),
    ))?)
}

/// Parses `/proc/PID/stat` (the comm may hold spaces and parentheses: fields follow its last `)`).
pub fn parse_stat(pid: u32, text: &str) -> Option<Proc> {
    let close = text.rfind(')')?;
    let comm = text[..close].split_once('(').map_or("", |(_, c)| c);
    let mut f = text[close + 1..].split_whitespace().skip(1);
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    // Fields 6 to 21, then the start time.
    let start = f.nth(16).and_then(|t| t.parse().ok()).unwrap_or(0);
    Some(Proc {
        pid,
        ppid,
        pgrp,
        start,
        mux: MuxRole::of_comm(comm),
    })
}

/// Processes that a multiplexer server running since before `since` (clock ticks after boot)
/// started at or after it, and their descendants, leaving out `job` and servers for which
/// `mine` is false: what a job's `tmux new-session -d …` or `screen -S s -X …` ran through a
/// server that is not the job's. Returns the multiplexers and the pids.
pub fn handed_off(
    table: &[Proc],
    since: u64,
    job: &BTreeSet<u32>,
    mine: impl Fn(u32) -> bool,
) -> (BTreeSet<Multiplexer>, BTreeSet<u32>) {
    let servers: BTreeMap<u32, Multiplexer> = table
        .iter()
        .filter(|p| p.start < since && !job.contains(&p.pid))
        .filter_map(|p| match p.mux {
            MuxRole::Server(m) => Some((p.pid, m)),
            _ => None,
        })
        .filter(|(pid, _)| mine(*pid))
        .collect();
    let mut via = BTreeSet::new();
    let mut started = BTreeSet::new();
    for p in table {
        if let Some(m) = servers.get(&p.ppid) {
            if p.start >= since && !job.contains(&p.pid) {
                via.insert(*m);
                started.insert(p.pid);
            }
        }
    }
    let mut all = kin(table, &started, None);
    all.extend(started);
    all.retain(|p| !job.contains(p));
    (via, all)
}

/// The user that owns process `pid` (its `/proc/PID` directory's owner: its effective uid), now.
pub fn owner(pid: u32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let dir = crate::layout::live(crate::layout::PROC).join(pid.to_string());
    std::fs::metadata(dir).ok().map(|m| m.uid())
}

/// `/proc/PID/stat` of one process, now.
pub fn read(pid: u32) -> Option<Proc> {
    parse_stat(
        pid,
        &std::fs::read_to_string(crate::layout::live(&crate::layout::proc_file(pid, "stat")))
            .ok()?,
    )
}

/// Every process of the live table (those that exit while it is read are left out).
pub fn scan() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir(crate::layout::live(crate::layout::PROC)) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read)
        .collect()
}

/// The processes of `table` that descend from one of `roots` (the roots not included), and
/// the members of process group `pgrp`.
pub fn kin(table: &[Proc], roots: &BTreeSet<u32>, pgrp: Option<u32>) -> BTreeSet<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for p in table {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut out: BTreeSet<u32> = BTreeSet::new();
    let mut todo: Vec<u32> = roots.iter().copied().collect();
    while let Some(pid) = todo.pop() {
        for &c in children.get(&pid).into_iter().flatten() {
            if !roots.contains(&c) && out.insert(c) {
                todo.push(c);
            }
        }
    }
    out.extend(
        table
            .iter()
            .filter(|p| Some(p.pgrp) == pgrp && !roots.contains(&p.pid))
            .map(|p| p.pid),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_follow_the_last_parenthesis() {
        let p = parse_stat(7, "7 (a) b) (c) S 3 9 9 0 -1").unwrap();
        assert_eq!((p.pid, p.ppid, p.pgrp, p.start), (7, 3, 9, 0));
        assert_eq!(p.mux, MuxRole::None);
        assert_eq!(parse_stat(7, "7 (x"), None);
        let line = "548 (tmux: server) S 1 548 548 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0";
        let server = parse_stat(548, line).unwrap();
        assert_eq!(server.start, 4242);
        assert_eq!(server.mux, MuxRole::Server(Multiplexer::Tmux));
    }

    #[test]
    fn what_a_running_server_started_for_the_job_is_handed_off() {
        let p = |pid, ppid, start, mux| Proc {
            pid,
            ppid,
            pgrp: pid,
            start,
            mux,
        };
        let tmux = Multiplexer::Tmux;
        let table = [
            p(5, 1, 10, MuxRole::Server(tmux)), // running before the job
            p(6, 5, 20, MuxRole::None),         // an older session's shell
            p(10, 1, 100, MuxRole::None),       // the job
            p(11, 10, 110, MuxRole::Client(tmux)),
            p(12, 5, 120, MuxRole::None), // the job's new session
            p(13, 12, 130, MuxRole::None),
            p(14, 1, 140, MuxRole::None), // someone else, later
        ];
        let job = BTreeSet::from([10, 11]);
        let (via, pids) = handed_off(&table, 100, &job, |_| true);
        assert_eq!(
            (via, pids),
            (BTreeSet::from([tmux]), BTreeSet::from([12, 13]))
        );
        assert!(
            handed_off(&table, 100, &job, |_| false).1.is_empty(),
            "another user's"
        );
        assert!(
            handed_off(&table, 5, &job, |_| true).1.is_empty(),
            "a server newer than the job"
        );
    }

    #[test]
    fn kin_are_descendants_at_any_depth_and_the_group() {
        let p = |pid, ppid, pgrp| Proc {
            pid,
            ppid,
            pgrp,
            start: 0,
            mux: MuxRole::None,
        };
        let table = [
            p(1, 0, 1),
            p(10, 1, 10),  // the job
            p(11, 10, 10), // its child
            p(12, 11, 12), // a grandchild that left the group
            p(13, 1, 10),  // an orphan still in the group
            p(20, 1, 20),  // someone else
            p(21, 20, 20),
        ];
        let roots = BTreeSet::from([10]);
        assert_eq!(kin(&table, &roots, Some(10)), BTreeSet::from([11, 12, 13]));
        assert_eq!(kin(&table, &roots, None), BTreeSet::from([11, 12]));
    }

    #[test]
    fn this_process_is_in_the_live_table() {
        let me = read(std::process::id()).unwrap();
        assert_eq!(
            me.pgrp,
            rustix::process::getpgrp().as_raw_nonzero().get() as u32
        );
        assert!(scan().iter().any(|p| p.pid == me.pid));
    }
}
