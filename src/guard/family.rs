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
}

/// Makes guard the subreaper of the processes it starts.
pub fn adopt_orphans() -> io::Result<()> {
    Ok(rustix::process::set_child_subreaper(Some(
        rustix::process::getpid(),
    ))?)
}

/// Parses `/proc/PID/stat` (the comm may hold spaces and parentheses: fields follow its last `)`).
pub fn parse_stat(pid: u32, text: &str) -> Option<Proc> {
    let after = &text[text.rfind(')')? + 1..];
    let mut f = after.split_whitespace().skip(1);
    Some(Proc {
        pid,
        ppid: f.next()?.parse().ok()?,
        pgrp: f.next()?.parse().ok()?,
    })
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
        assert_eq!(
            p,
            Proc {
                pid: 7,
                ppid: 3,
                pgrp: 9
            }
        );
        assert_eq!(parse_stat(7, "7 (x"), None);
    }

    #[test]
    fn kin_are_descendants_at_any_depth_and_the_group() {
        let p = |pid, ppid, pgrp| Proc { pid, ppid, pgrp };
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
