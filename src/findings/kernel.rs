//! Post-mortem findings from the kernel log: `kernel_page_alloc_failure`, `kernel_oom_kill` and
//! `kernel_gpu_error`. They hold after the job is gone, which is when people look.
//!
//! Severity:
//! - a page-allocation failure is critical when the failing task is a GPU job process (it
//!   holds GPU fds in this snapshot, or the failing allocation's stack runs through TTM or a GPU
//!   driver), a warning otherwise;
//! - an OOM kill is always critical: a process was killed for memory;
//! - a GPU driver error is critical when the GPU is lost or must be reset (Xid 48, 62, 64, 79,
//!   95, 119, 120, 154; a driver line saying wedged, fallen off the bus or reset failed), a
//!   warning otherwise.
//!
//! Repeats are folded: one finding per failing task, per OOM victim, per (device, Xid or
//! driver); the message says how many and when the first and last were.

use super::{Finding, Kind, Severity};
use crate::layout;
use crate::ledger::Ledger;
use crate::snapshot::{IssueReason, ScanIssue, ScanStats};
use crate::sources::kernel_events::{self, AllocFailure, GpuError, KernelFact, OomKill};
use crate::sources::kernel_log::WholeLog;
use crate::units::human_bytes;
use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

/// Page size the allocation orders are counted in (the kernel's on every GPU platform).
const PAGE: u64 = 4096;
/// GPU-error findings at most (the most recent groups); a flood of one error stays one group.
const MAX_GPU_GROUPS: usize = 32;

/// The findings the kernel log holds, for the machine whose ledger is `ledger`; those whose
/// last line is before `cutoff` (µs since boot, [`super::window::Since::cutoff_usec`]) are
/// history: info, whatever they were.
pub fn find(log: &WholeLog, ledger: &Ledger, cutoff: Option<u64>) -> Vec<Finding> {
    let source = log.origin.map(|o| o.as_str().to_string());
    let when = |usec: u64| when(usec, log.boot_s);
    let mut allocs: BTreeMap<(Option<u32>, String), Vec<AllocFailure>> = BTreeMap::new();
    let mut gpu: BTreeMap<(Option<String>, String), Vec<GpuError>> = BTreeMap::new();
    let mut out = Vec::new();
    for fact in kernel_events::parse(&log.records) {
        match fact {
            KernelFact::AllocFailure(a) => {
                allocs.entry((a.pid, a.comm.clone())).or_default().push(a)
            }
            KernelFact::OomKill(o) => out.push((oom(&o, &when(o.usec)), o.usec)),
            KernelFact::GpuError(e) => {
                let what = e.xid.map_or(e.driver.clone(), |x| format!("Xid {x}"));
                gpu.entry((e.device.clone(), what)).or_default().push(e);
            }
        }
    }
    for group in allocs.values() {
        let last = group.last().map_or(0, |a| a.usec);
        out.push((alloc(group, ledger, &when), last));
    }
    let mut groups: Vec<&Vec<GpuError>> = gpu.values().collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.last().map_or(0, |e| e.usec)));
    for group in groups.into_iter().take(MAX_GPU_GROUPS) {
        let last = group.last().map_or(0, |e| e.usec);
        out.push((gpu_error(group, &when), last));
    }
    out.into_iter()
        .map(|(mut f, last)| {
            f.source = source.clone();
            if cutoff.is_some_and(|c| last < c) {
                f.severity = Severity::Info;
                f.message = format!(
                    "history, before the window (--since; default the last hour): {}",
                    f.message
                );
            }
            f
        })
        .collect()
}

/// Adds the kernel log's findings (history before `cutoff`, as [`find`]) to `found` (ranked
/// again) and, when the log could not be read, its note to the ledger's scan notes: what every
/// view does with a [`WholeLog`].
pub fn add(log: &WholeLog, ledger: &mut Ledger, found: &mut Vec<Finding>, cutoff: Option<u64>) {
    note_unreadable(log, &mut ledger.stats);
    found.extend(find(log, ledger, cutoff));
    super::rank(found);
}

/// Adds an unreadable log to the scan's notes (once per snapshot), so no view is silent about
/// findings it could not look for.
fn note_unreadable(log: &WholeLog, stats: &mut ScanStats) {
    let Some(why) = &log.unreadable else {
        return;
    };
    stats.issues_total = stats.issues_total.saturating_add(1);
    // First, so that the views that list only the first few issues still show it.
    stats.issues.insert(
        0,
        ScanIssue {
            path: layout::LIVE_KMSG.into(),
            reason: IssueReason::Unreadable,
            detail: format!(
                "kernel log not read ({why}): no findings for page-allocation failures, OOM \
                 kills or GPU driver errors; run as root, or as a member of systemd-journal"
            ),
        },
    );
}

/// "at 3606.0 s after boot (2026-12-03T17:47:35Z)", or without the wall-clock time when the
/// boot time is not known.
fn when(usec: u64, boot_s: Option<u64>) -> String {
    let since = format!("at {:.1} s after boot", usec as f64 / 1e6);
    match boot_s {
        Some(b) => {
            let t = UNIX_EPOCH + Duration::from_secs(b) + Duration::from_micros(usec);
            format!("{since} ({})", humantime::format_rfc3339_seconds(t))
        }
        None => format!("{since} (wall-clock time unknown: no boot time)"),
    }
}

/// "3 times, first at …, last at …" or "at …".
fn times(n: usize, first: &str, last: &str) -> String {
    if n > 1 {
        format!("{n} times, first {first}, last {last}")
    } else {
        first.to_string()
    }
}

fn alloc(group: &[AllocFailure], ledger: &Ledger, when: &dyn Fn(u64) -> String) -> Finding {
    let a = &group[0];
    let last = group.last().unwrap_or(a);
    let holds_gpu = a
        .pid
        .is_some_and(|p| ledger.processes.iter().any(|r| r.pid == p));
    let gpu_job = holds_gpu || group.iter().any(|g| g.gpu_stack);
    let order = group.iter().map(|g| g.order).max().unwrap_or(0);
    let who = match a.pid {
        Some(p) => format!("{} (pid {p})", a.comm),
        None => a.comm.clone(),
    };
    let why = if group.iter().any(|g| g.gpu_stack) {
        "in a GPU driver's allocation (TTM/driver frames in its stack): host RAM ran out under GPU buffers"
    } else if holds_gpu {
        "a GPU process: host RAM ran out under it"
    } else {
        "not a GPU process that this snapshot sees"
    };
    let mut f = Finding::new(
        Kind::KernelPageAllocFailure,
        if gpu_job {
            Severity::Critical
        } else {
            Severity::Warning
        },
        format!(
            "{who} could not get an order-{order} page block ({}{}) {}; {why}; see --explain kernel_page_alloc_failure",
            human_bytes(PAGE << order.min(20)),
            a.mode.as_deref().map(|m| format!(", mode {m}")).unwrap_or_default(),
            times(group.len(), &when(a.usec), &when(last.usec)),
        ),
    );
    f.pid = a.pid;
    f.bytes = PAGE << order.min(20);
    f
}

fn oom(o: &OomKill, at: &str) -> Finding {
    let kib = o.anon_kib + o.file_kib + o.shmem_kib;
    let scope = if o.cgroup {
        "its memory cgroup's limit"
    } else {
        "the machine"
    };
    let mut f = Finding::new(
        Kind::KernelOomKill,
        Severity::Critical,
        format!(
            "the OOM killer killed {} (pid {}) {at} because {scope} ran out of memory; it held {} (anon-rss {}, file-rss {}, shmem-rss {}); see --explain kernel_oom_kill",
            o.comm,
            o.pid,
            human_bytes(kib * 1024),
            human_bytes(o.anon_kib * 1024),
            human_bytes(o.file_kib * 1024),
            human_bytes(o.shmem_kib * 1024),
        ),
    );
    f.pid = Some(o.pid);
    f.bytes = kib * 1024;
    f
}

/// Driver lines that mean the GPU is lost or needs a reset.
const FATAL_WORDS: [&str; 4] = ["wedged", "fallen off", "reset failed", "failed to reset"];

fn gpu_error(group: &[GpuError], when: &dyn Fn(u64) -> String) -> Finding {
    let first = &group[0];
    let last = group.last().unwrap_or(first);
    let meaning = first.xid.and_then(kernel_events::xid_meaning);
    let fatal = match (first.xid, meaning) {
        (Some(_), Some((_, reset))) => reset,
        (Some(_), None) => false,
        (None, _) => group.iter().any(|e| {
            let m = e.message.to_lowercase();
            FATAL_WORDS.iter().any(|w| m.contains(w))
        }),
    };
    let what = match (first.xid, meaning) {
        (Some(x), Some((m, _))) => format!("NVIDIA Xid {x} ({m})"),
        (Some(x), None) => {
            format!("NVIDIA Xid {x} (not in gpuledger's table: see NVIDIA's Xid catalog)")
        }
        (None, _) => format!("{} error", first.driver),
    };
    let on = first.device.as_deref().unwrap_or("a GPU");
    let mut f = Finding::new(
        Kind::KernelGpuError,
        if fatal {
            Severity::Critical
        } else {
            Severity::Warning
        },
        format!(
            "{what} on {on}, {}; last line{}: {}; see --explain kernel_gpu_error",
            times(group.len(), &when(first.usec), &when(last.usec)),
            last.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
            last.message,
        ),
    );
    f.device = first.device.clone();
    f.pid = last.pid;
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_log_is_noted_once() {
        let log = WholeLog {
            unreadable: Some("/dev/kmsg: permission denied".into()),
            ..WholeLog::default()
        };
        let mut stats = ScanStats::default();
        note_unreadable(&log, &mut stats);
        assert_eq!(stats.issues_total, 1);
        assert!(stats.issues[0].detail.contains("OOM kills"));
        note_unreadable(&WholeLog::default(), &mut stats);
        assert_eq!(stats.issues_total, 1, "a readable log adds nothing");
    }
    use crate::sources::kernel_log::LogOrigin;
    use crate::sources::kmsg::KmsgRecord;

    fn log(lines: &[(u32, u64, &str)], boot_s: Option<u64>) -> WholeLog {
        WholeLog {
            records: lines
                .iter()
                .enumerate()
                .map(|(i, (prio, usec, m))| KmsgRecord {
                    prio: *prio,
                    seq: i as u64,
                    usec: *usec,
                    message: m.to_string(),
                    dict: Vec::new(),
                })
                .collect(),
            origin: Some(LogOrigin::Tree),
            unreadable: None,
            boot_s,
        }
    }

    #[test]
    fn gpu_stack_failures_are_critical_and_folded_per_task() {
        let l = log(
            &[
                (4, 3_606_000_000, "python3: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER|__GFP_ZERO), nodemask=(null)"),
                (4, 3_606_000_007, "CPU: 0 UID: 1000 PID: 4001 Comm: python3 Not tainted 7.1.3 #1"),
                (4, 3_606_000_014, " xe_bo_validate+0x51/0x90 [xe]"),
                (4, 3_607_000_000, "python3: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER|__GFP_ZERO), nodemask=(null)"),
                (4, 3_607_000_007, "CPU: 0 UID: 1000 PID: 4001 Comm: python3 Not tainted 7.1.3 #1"),
                (4, 9_000_000, "earlyoom: page allocation failure: order:0, mode:0x800(GFP_NOWAIT), nodemask=(null)"),
                (4, 9_000_001, "CPU: 5 PID: 84786 Comm: earlyoom Not tainted 5.9.0 #1"),
            ],
            Some(1_764_780_000),
        );
        let found = find(&l, &Ledger::default(), None);
        assert_eq!(found.len(), 2, "{found:#?}");
        let py = found.iter().find(|f| f.pid == Some(4001)).unwrap();
        assert_eq!(py.severity, Severity::Critical);
        assert!(
            py.message
                .contains("2 times, first at 3606.0 s after boot (2025-12-03T17:40:06Z)"),
            "{}",
            py.message
        );
        assert!(py
            .message
            .contains("mode 0x100dc2(GFP_HIGHUSER|__GFP_ZERO)"));
        let other = found.iter().find(|f| f.pid == Some(84786)).unwrap();
        assert_eq!(other.severity, Severity::Warning);
        assert_eq!(
            other.source.as_deref(),
            Some("kernel log (dev/kmsg of the tree)")
        );
    }

    #[test]
    fn oom_kills_and_xids() {
        let l = log(
            &[
                (3, 518_050_606, "Out of memory: Killed process 15784 (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB"),
                (4, 1_843_000_000, "NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                (4, 1_844_000_000, "NVRM: Xid (PCI:0000:0a:00): 13, pid=1797828, name=pt_main_thread, Graphics Exception"),
                (4, 1_845_000_000, "NVRM: Xid (PCI:0000:0a:00): 13, pid=1797828, name=pt_main_thread, Graphics Exception"),
            ],
            None,
        );
        let found = find(&l, &Ledger::default(), None);
        let oom = found
            .iter()
            .find(|f| f.kind == Kind::KernelOomKill)
            .unwrap();
        assert_eq!(
            (oom.severity, oom.pid, oom.bytes),
            (Severity::Critical, Some(15784), 7316 * 1024)
        );
        assert!(oom.message.contains("wall-clock time unknown"));
        let lost = found
            .iter()
            .find(|f| f.device.as_deref() == Some("0000:44:00.0"))
            .unwrap();
        assert_eq!(lost.severity, Severity::Critical);
        assert!(lost.message.contains("fallen off the bus"));
        let xid13 = found
            .iter()
            .find(|f| f.device.as_deref() == Some("0000:0a:00.0"))
            .unwrap();
        assert_eq!(
            (xid13.severity, xid13.pid),
            (Severity::Warning, Some(1797828))
        );
        assert!(xid13.message.contains("2 times"));
    }

    #[test]
    fn failures_before_the_window_are_history() {
        let l = log(
            &[
                (3, 1_000_000_000, "Out of memory: Killed process 15784 (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB"),
                (3, 9_000_000_000, "Out of memory: Killed process 15785 (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB"),
            ],
            None,
        );
        let cutoff = crate::findings::window::Since::default().cutoff_usec(&l, None);
        let found = find(&l, &Ledger::default(), cutoff);
        let sev = |pid| found.iter().find(|f| f.pid == Some(pid)).unwrap();
        assert_eq!(sev(15785).severity, Severity::Critical, "within the hour");
        let old = sev(15784);
        assert_eq!(old.severity, Severity::Info, "2 h before the last line");
        assert!(
            old.message.starts_with("history, before the window"),
            "{}",
            old.message
        );
        let all = find(&l, &Ledger::default(), None);
        assert!(all.iter().all(|f| f.severity == Severity::Critical));
    }

    #[test]
    fn ordinary_kernel_lines_make_no_finding() {
        let l = log(
            &[
                (
                    6,
                    1_000_000,
                    "amdgpu 0000:03:00.0: amdgpu: SMU is initialized successfully!",
                ),
                (
                    6,
                    2_000_000,
                    "[drm] Initialized amdgpu 3.57.0 for 0000:03:00.0 on minor 1",
                ),
                (
                    6,
                    3_000_000,
                    "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode",
                ),
            ],
            None,
        );
        assert_eq!(find(&l, &Ledger::default(), None), Vec::new());
    }
}
