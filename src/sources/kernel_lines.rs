//! The shapes of the kernel's own log lines, anchored where the kernel prints them.
//!
//! A kernel log holds text that users choose: the kernel's report of a user process's fault
//! prints the task's name (`comm`, at most 15 bytes, set by `prctl(PR_SET_NAME)` or the
//! executable's name) and the faulting file's name (any length):
//! arch/x86/mm/fault.c `show_signal_msg` ("COMM[PID]: segfault at … in FILE[…]"),
//! arch/x86/kernel/traps.c ("traps: COMM[PID] general protection fault ip:… in FILE[…]",
//! "… trap int3 …"). A pattern matched anywhere in a line would take such a file name for an OOM
//! kill or an Xid, so every pattern here is anchored at the start of the message, where the
//! kernel prints its own words; where a line starts with a task name, that name is held to the
//! kernel's 15 bytes, so nothing a user names can reach the words that follow it. Lines of a
//! user-chosen shape are never read for facts ([`user_shaped`]), and only records of the kernel
//! facility count ([`from_kernel`]): lines user space writes into `/dev/kmsg` carry its own.
// ref: include/linux/sched.h TASK_COMM_LEN (16, with the NUL)
// ref: Documentation/ABI/testing/dev-kmsg (PRI = facility × 8 + level; LOG_KERN is 0)

use super::kmsg::KmsgRecord;
use regex::Regex;
use std::sync::LazyLock;

/// Longest task name the kernel prints, in bytes (TASK_COMM_LEN − 1).
const COMM_MAX: usize = 15;

/// The anchored line patterns, compiled once (constants; the tests check that they compile).
pub(super) struct Shapes {
    /// `COMM: page allocation failure: order:N[, mode:0xX(FLAGS)]` (mm/page_alloc.c `warn_alloc`).
    pub alloc: Regex,
    /// `CPU: N [UID: U ]PID: P Comm: C Not tainted|Tainted` (lib/dump_stack.c).
    pub task: Regex,
    /// `[Memory cgroup ]Out of memory: Killed process P (C) total-vm:…` (mm/oom_kill.c).
    pub oom: Regex,
    /// Any of the OOM killer's lines about a victim (`Out of memory: Kill[ed] process P (C) …`,
    /// the older `Killed process P (C) …`), for keeping them as evidence.
    pub oom_line: Regex,
    /// `oom-kill:constraint=…,task=C,pid=P,uid=U` (mm/oom_kill.c `dump_oom_summary`, 4.19+).
    pub oom_summary: Regex,
    /// `COMM invoked oom-killer: gfp_mask=…` (mm/oom_kill.c `dump_header`).
    pub oom_header: Regex,
    /// `NVRM: Xid (PCI:DDDD:BB:DD): N, …` (NVIDIA's driver).
    pub xid: Regex,
    /// `pid=N` right after an Xid's number (before the task name the driver prints).
    pub xid_pid: Regex,
    /// `xe|i915|amdgpu DDDD:BB:DD.F: …` (drm `dev_*` printing).
    pub drm_dev: Regex,
    /// The user-chosen shapes: a task's fault reports.
    user: Regex,
}

static SHAPES: LazyLock<Option<Shapes>> = LazyLock::new(Shapes::compile);

impl Shapes {
    fn compile() -> Option<Shapes> {
        let re = |p: &str| Regex::new(p).ok();
        Some(Shapes {
            alloc: re(
                r"^(.+?): page allocation failure: order:(\d+)(?:, mode:(0x[0-9a-fA-F]+(?:\([^)]*\))?))?",
            )?,
            task: re(r"^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (.*?) (?:Not tainted|Tainted)")?,
            oom: re(
                r"^(?:(Memory cgroup )?[Oo]ut of memory: )?Killed process (\d+) \((.+?)\) total-vm:[\d,]+kB, anon-rss:([\d,]+)kB, file-rss:([\d,]+)kB(?:, shmem-rss:([\d,]+)kB)?",
            )?,
            oom_line: re(r"^(?:(?:Memory cgroup )?[Oo]ut of memory: |Killed process \d+ \()")?,
            oom_summary: re(r"^oom-kill:constraint=.*,pid=(\d+),uid=\d+\s*$")?,
            oom_header: re(r"^(.+?) invoked oom-killer: gfp_mask=0x")?,
            xid: re(
                r"^NVRM: Xid \(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\): (\d+),(.*)",
            )?,
            xid_pid: re(r"^ ?pid=(\d+)")?,
            drm_dev: re(
                r"^(xe|i915|amdgpu) ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): ",
            )?,
            user: re(
                r"^(?:traps: )?.+?\[\d+\]:? (?:segfault at |trap |general protection|int3|unhandled |potentially unexpected fatal signal)",
            )?,
        })
    }
}

/// The compiled shapes (`None` only if a constant pattern failed to compile, which the tests
/// rule out).
pub(super) fn shapes() -> Option<&'static Shapes> {
    SHAPES.as_ref()
}

/// Whether a record is of the kernel facility (LOG_KERN): lines written to `/dev/kmsg` from user
/// space carry LOG_USER or their own facility.
pub fn from_kernel(r: &KmsgRecord) -> bool {
    r.prio >> 3 == 0
}

/// Whether a message has a shape whose text a user chooses (a task's segfault, trap or general
/// protection report): such lines are never read for facts.
pub fn user_shaped(message: &str) -> bool {
    shapes().is_some_and(|s| s.user.is_match(message))
}

/// Whether a record may be read for facts: the kernel's own, not of a user-chosen shape.
pub fn trusted(r: &KmsgRecord) -> bool {
    from_kernel(r) && !user_shaped(&r.message)
}

/// Whether `comm`, as the log shows it, fits the kernel's task name: at most 15 bytes, a byte the
/// kernel escaped (`\xNN`) counting as one and a replaced invalid byte (U+FFFD) as one.
pub fn comm_fits(comm: &str) -> bool {
    let mut bytes = 0usize;
    let mut rest = comm;
    while let Some(c) = rest.chars().next() {
        let escaped = rest.len() >= 4
            && rest.starts_with("\\x")
            && rest.as_bytes()[2..4].iter().all(u8::is_ascii_hexdigit);
        let (width, step) = match (escaped, c) {
            (true, _) => (1, 4),
            (false, '\u{fffd}') => (1, c.len_utf8()),
            (false, c) => (c.len_utf8(), c.len_utf8()),
        };
        bytes += width;
        rest = &rest[step..];
    }
    (1..=COMM_MAX).contains(&bytes)
}

/// The task name a line starts with, when the line is `COMM` + `sep` + what the kernel prints
/// and COMM fits; matched by `pattern`'s first group.
pub(super) fn leading_comm<'a>(pattern: &Regex, message: &'a str) -> Option<&'a str> {
    let comm = pattern.captures(message)?.get(1)?.as_str();
    comm_fits(comm).then_some(comm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_compile() {
        assert!(shapes().is_some());
    }

    #[test]
    fn task_names_are_held_to_fifteen_bytes() {
        assert!(comm_fits("python3"));
        assert!(comm_fits("pt_main_thread"));
        assert!(comm_fits("123456789012345"));
        assert!(!comm_fits("1234567890123456"));
        assert!(comm_fits("a\\x0ab"));
        assert!(!comm_fits(""));
        assert!(!comm_fits("x Out of memory: Killed process 4242"));
    }

    #[test]
    fn fault_reports_are_user_shaped() {
        for line in [
            "evil[4242]: segfault at 0 ip 0000000000401126 sp 00007ffd error 6 in x Out of memory: Killed process 1 (a)[401000+1000]",
            "traps: evil[4242] general protection fault ip:401126 sp:7ffd error:0 in NVRM: Xid[401000+1000]",
            "traps: evil[4242] trap int3 ip:401127 sp:7ffd error:0 in evil[401000+1000]",
            "evil[4242]: unhandled level 2 translation fault (11) at 0x0, esr 0x92000006",
        ] {
            assert!(user_shaped(line), "{line}");
        }
        for line in [
            "Out of memory: Killed process 15784 (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB",
            "python3: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER|__GFP_ZERO), nodemask=(null)",
            "NVRM: Xid (PCI:0000:0a:00): 13, pid=1797828, name=pt_main_thread, Graphics Exception",
        ] {
            assert!(!user_shaped(line), "{line}");
        }
    }

    #[test]
    fn user_space_records_are_not_the_kernel() {
        let r = |prio| KmsgRecord {
            prio,
            seq: 1,
            usec: 1,
            message: "Out of memory: Killed process 1 (x) total-vm:1kB, anon-rss:1kB, file-rss:0kB"
                .into(),
            dict: Vec::new(),
        };
        assert!(trusted(&r(3)));
        assert!(!trusted(&r(8 + 3)));
        assert!(!trusted(&r(3 * 8 + 6)));
    }
}
