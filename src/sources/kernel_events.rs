//! What kernel log records say, parsed: page-allocation failures, OOM kills and GPU driver
//! errors, each with its time on the log's clock (µs since boot).
//!
//! ref: mm/page_alloc.c `warn_alloc` ("COMM: page allocation failure: order:N, mode:0xX(FLAGS),
//! nodemask=…", then `dump_stack`'s "CPU: N [UID: U] PID: P Comm: C …" and the stack);
//! mm/oom_kill.c `__oom_kill_process` ("[Memory cgroup ]Out of memory: Killed process P (C)
//! total-vm:…kB, anon-rss:…kB, file-rss:…kB, shmem-rss:…kB, …"); NVIDIA's driver
//! ("NVRM: Xid (PCI:DDDD:BB:DD): N, …", ids per NVIDIA's public Xid catalog); xe, i915 and amdgpu
//! print "DRIVER DDDD:BB:DD.F: …" (drm `dev_*` printing) for resets, hangs and faults.
//!
//! Only records [`kernel_lines::trusted`] are read, with the anchored shapes of
//! [`kernel_lines`]: no text a user chooses (a task or file name) can make a fact. An OOM victim
//! is cross-checked with the `oom-kill:` summary the kernel prints just before it (4.19+): a
//! summary that names another pid makes the kill line no fact.

use super::kernel_lines::{self, leading_comm, trusted, Shapes};
use super::kmsg::KmsgRecord;

/// How far after a failure header its task line and stack are looked for.
const STACK_WINDOW: usize = 48;

/// Stack frames in these modules mean the allocation was made for a GPU buffer.
const GPU_MODULES: [&str; 9] = [
    "[ttm]",
    "[xe]",
    "[i915]",
    "[amdgpu]",
    "[amdttm]",
    "[nvidia]",
    "[nvidia_uvm]",
    "[drm]",
    "[drm_ttm_helper]",
];

/// One parsed kernel event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelFact {
    /// The page allocator could not satisfy a request.
    AllocFailure(AllocFailure),
    /// The OOM killer killed a process.
    OomKill(OomKill),
    /// A GPU driver reported an error, reset or fault.
    GpuError(GpuError),
}

/// `warn_alloc`'s report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocFailure {
    /// µs since boot.
    pub usec: u64,
    /// The failing task's name.
    pub comm: String,
    /// Its pid, from the task line that follows (absent in some logs).
    pub pid: Option<u32>,
    /// Allocation order: 2^order pages were asked for.
    pub order: u32,
    /// The GFP mode as printed (`0x100dc2(GFP_HIGHUSER|__GFP_ZERO)`), where the line has one.
    pub mode: Option<String>,
    /// The stack runs through a GPU driver or TTM.
    pub gpu_stack: bool,
}

/// The OOM killer's victim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomKill {
    /// µs since boot.
    pub usec: u64,
    /// Victim pid.
    pub pid: u32,
    /// Victim name.
    pub comm: String,
    /// anon-rss, file-rss, shmem-rss in KiB.
    pub anon_kib: u64,
    /// File-backed resident KiB.
    pub file_kib: u64,
    /// Shared-memory resident KiB.
    pub shmem_kib: u64,
    /// A memory cgroup's limit, not the machine, ran out.
    pub cgroup: bool,
}

/// A GPU driver's error line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuError {
    /// µs since boot.
    pub usec: u64,
    /// `xe`, `i915`, `amdgpu`, `nvidia`.
    pub driver: String,
    /// PCI slot `DDDD:BB:DD.F`, where the line names one.
    pub device: Option<String>,
    /// NVIDIA's Xid number.
    pub xid: Option<u32>,
    /// The pid the driver named (`pid=N` of an Xid line).
    pub pid: Option<u32>,
    /// The line itself.
    pub message: String,
}

fn num(s: &str) -> u64 {
    s.replace(',', "").parse().unwrap_or(0)
}

/// Words that make a GPU driver's line an error, reset or fault (lower case).
const GPU_ERROR_WORDS: [&str; 10] = [
    "reset",
    "fault",
    "hang",
    "timeout",
    "timed out",
    "wedged",
    "fallen off",
    "*error*",
    "lost",
    "failed",
];

/// Whether a GPU driver line reports an error: its level is err or worse, or it names a reset,
/// hang, fault or timeout.
fn is_gpu_error(r: &KmsgRecord) -> bool {
    let lower = r.message.to_lowercase();
    (r.prio & 7) <= 3 || GPU_ERROR_WORDS.iter().any(|w| lower.contains(w))
}

/// Every event the records hold, oldest first.
pub fn parse(records: &[KmsgRecord]) -> Vec<KernelFact> {
    let Some(p) = kernel_lines::shapes() else {
        return Vec::new();
    };
    (0..records.len())
        .filter(|&i| trusted(&records[i]))
        .filter_map(|i| fact(p, records, i))
        .collect()
}

/// What record `i` says, read with what comes before and after it.
fn fact(p: &Shapes, records: &[KmsgRecord], i: usize) -> Option<KernelFact> {
    let r = &records[i];
    let m = r.message.as_str();
    if let Some(comm) = leading_comm(&p.alloc, m) {
        return alloc(p, r, comm, &records[i + 1..]);
    }
    if let Some(c) = p.oom.captures(m).filter(|c| kernel_lines::comm_fits(&c[3])) {
        let kill = OomKill {
            usec: r.usec,
            pid: c[2].parse().unwrap_or(0),
            comm: c[3].to_string(),
            anon_kib: num(&c[4]),
            file_kib: num(&c[5]),
            shmem_kib: c.get(6).map_or(0, |m| num(m.as_str())),
            cgroup: c.get(1).is_some(),
        };
        return summary_agrees(p, &records[..i], kill.pid).then_some(KernelFact::OomKill(kill));
    }
    if let Some(c) = p.xid.captures(m) {
        return Some(KernelFact::GpuError(GpuError {
            usec: r.usec,
            driver: "nvidia".into(),
            device: Some(format!("{}.0", c[1].to_lowercase())),
            xid: c[2].parse().ok(),
            pid: p.xid_pid.captures(&c[3]).and_then(|p| p[1].parse().ok()),
            message: m.to_string(),
        }));
    }
    let c = p.drm_dev.captures(m).filter(|_| is_gpu_error(r))?;
    Some(KernelFact::GpuError(GpuError {
        usec: r.usec,
        driver: c[1].to_string(),
        device: Some(c[2].to_lowercase()),
        xid: None,
        pid: None,
        message: m.to_string(),
    }))
}

/// A page-allocation failure header and what its task line and stack after it say.
fn alloc(p: &Shapes, r: &KmsgRecord, comm: &str, after: &[KmsgRecord]) -> Option<KernelFact> {
    let c = p.alloc.captures(&r.message)?;
    let (pid, gpu_stack) = task_and_stack(p, after);
    Some(KernelFact::AllocFailure(AllocFailure {
        usec: r.usec,
        comm: comm.to_string(),
        pid,
        order: c[2].parse().unwrap_or(0),
        mode: c.get(3).map(|m| m.as_str().to_string()),
        gpu_stack,
    }))
}

/// Records before an OOM kill line that can hold its `oom-kill:` summary.
const SUMMARY_WINDOW: usize = 64;

/// Whether the `oom-kill:` summary nearest before a kill line (within the window, and not before
/// the previous kill) names the same pid; a log without one (a kernel before 4.19, an excerpt)
/// leaves the kill line to stand on its own anchored shape.
fn summary_agrees(p: &Shapes, before: &[KmsgRecord], pid: u32) -> bool {
    let nearest = before
        .iter()
        .rev()
        .take(SUMMARY_WINDOW)
        .filter(|r| trusted(r))
        .take_while(|r| !p.oom.is_match(&r.message))
        .find_map(|r| p.oom_summary.captures(&r.message));
    nearest.is_none_or(|c| c[1].parse() == Ok(pid))
}

/// The pid of the task line after a failure header and whether its stack passes a GPU module.
fn task_and_stack(p: &Shapes, after: &[KmsgRecord]) -> (Option<u32>, bool) {
    let mut pid = None;
    let mut gpu = false;
    for r in after.iter().take(STACK_WINDOW).filter(|r| trusted(r)) {
        let m = r.message.as_str();
        if m.starts_with("Mem-Info:") || p.alloc.is_match(m) {
            break;
        }
        if pid.is_none() {
            pid = p.task.captures(m).and_then(|c| c[1].parse().ok());
        }
        gpu |= GPU_MODULES.iter().any(|g| m.trim_end().ends_with(g));
    }
    (pid, gpu)
}

/// NVIDIA's public meaning of an Xid, and whether the GPU needs a reset (or is lost) after it.
pub fn xid_meaning(xid: u32) -> Option<(&'static str, bool)> {
    Some(match xid {
        8 => ("GPU stopped processing (a channel timed out)", false),
        13 => ("graphics engine exception: usually the application's own illegal access or instruction", false),
        31 => ("GPU memory page fault (MMU fault): usually an illegal address in the application", false),
        32 => ("invalid or corrupted push buffer stream", false),
        38 => ("driver firmware error", false),
        43 => ("GPU stopped processing: a channel was reset after an application fault", false),
        45 => ("preemptive cleanup: channels torn down after an earlier error or a killed process", false),
        48 => ("double-bit ECC error in GPU memory", true),
        61 => ("internal micro-controller breakpoint or warning", false),
        62 => ("internal micro-controller halt", true),
        63 => ("ECC page retirement or row remapping recorded", false),
        64 => ("ECC page retirement or row remapping failed", true),
        69 => ("graphics engine class error", false),
        74 => ("NVLink error", false),
        79 => ("GPU has fallen off the bus", true),
        92 => ("high single-bit ECC error rate", false),
        94 => ("contained ECC error: the affected application was stopped", false),
        95 => ("uncontained ECC error: the GPU must be reset", true),
        109 => ("context switch timeout", false),
        119 => ("GSP firmware RPC timeout", true),
        120 => ("GSP firmware error", true),
        154 => ("GPU recovery action changed: a reset or reboot is required", true),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rec(prio: u32, usec: u64, message: &str) -> KmsgRecord {
        KmsgRecord {
            prio,
            seq: usec,
            usec,
            message: message.into(),
            dict: Vec::new(),
        }
    }

    #[test]
    fn the_patterns_compile() {
        assert!(kernel_lines::shapes().is_some());
    }

    #[test]
    fn failure_with_task_line_and_gpu_stack() {
        let log = [
            rec(4, 1, "python3: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER|__GFP_ZERO), nodemask=(null)"),
            rec(4, 2, "CPU: 3 UID: 1000 PID: 4001 Comm: python3 Not tainted 7.1.3 #1"),
            rec(4, 3, " ttm_pool_alloc+0x2bd/0x690 [ttm]"),
            rec(4, 4, "java: page allocation failure: order:0, mode:0x2084120(GFP_ATOMIC|__GFP_COLD|__GFP_COMP)"),
            rec(4, 5, "CPU: 7 PID: 111104 Comm: java Not tainted 4.9.24-coreos #1"),
        ];
        let facts = parse(&log);
        let KernelFact::AllocFailure(a) = &facts[0] else {
            panic!("{facts:?}")
        };
        assert_eq!((a.pid, a.order, a.gpu_stack), (Some(4001), 0, true));
        assert_eq!(a.mode.as_deref(), Some("0x100dc2(GFP_HIGHUSER|__GFP_ZERO)"));
        let KernelFact::AllocFailure(b) = &facts[1] else {
            panic!("{facts:?}")
        };
        assert_eq!(
            (b.pid, b.gpu_stack, b.comm.as_str()),
            (Some(111104), false, "java")
        );
    }

    #[test]
    fn oom_kills_xids_and_driver_resets() {
        let log = [
            rec(3, 1, "Out of memory: Killed process 7899 (python) total-vm:26,184,840kB, anon-rss:15,370,088kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:38964kB oom_score_adj:0"),
            rec(4, 2, "NVRM: Xid (PCI:0000:0A:00): 31, pid=13332, name=cuda_plot_k32_v, Ch 00000010"),
            rec(3, 3, "amdgpu 0000:28:00.0: ring gfx_0.0.0 timeout, signaled seq=57638, emitted seq=57641"),
            rec(6, 4, "amdgpu 0000:28:00.0: [drm] PCIE GART of 512M enabled"),
        ];
        let facts = parse(&log);
        assert_eq!(facts.len(), 3, "{facts:?}");
        let KernelFact::OomKill(o) = &facts[0] else {
            panic!()
        };
        assert_eq!((o.pid, o.anon_kib, o.cgroup), (7899, 15_370_088, false));
        let KernelFact::GpuError(x) = &facts[1] else {
            panic!()
        };
        assert_eq!((x.xid, x.pid), (Some(31), Some(13332)));
        assert_eq!(x.device.as_deref(), Some("0000:0a:00.0"));
        let KernelFact::GpuError(a) = &facts[2] else {
            panic!()
        };
        assert_eq!(
            (a.driver.as_str(), a.device.as_deref()),
            ("amdgpu", Some("0000:28:00.0"))
        );
    }

    /// The kernel's `oom-kill:` summary names the victim just before the kill line: a kill line
    /// whose summary names another pid is no fact; one with its summary, or none, is.
    #[test]
    fn a_kill_line_must_agree_with_its_oom_summary() {
        let kill = "Out of memory: Killed process 4242 (python3) total-vm:1kB, anon-rss:9kB, file-rss:0kB, shmem-rss:0kB";
        let summary = |pid: u32| {
            format!("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=python3,pid={pid},uid=1000")
        };
        let kills = |log: &[KmsgRecord]| {
            parse(log)
                .iter()
                .filter(|f| matches!(f, KernelFact::OomKill(_)))
                .count()
        };
        assert_eq!(kills(&[rec(6, 1, &summary(4242)), rec(3, 2, kill)]), 1);
        assert_eq!(kills(&[rec(6, 1, &summary(77)), rec(3, 2, kill)]), 0);
        assert_eq!(kills(&[rec(3, 2, kill)]), 1);
        // A task named to look like a summary's tail cannot move the pid: the last one counts.
        let named = "oom-kill:constraint=CONSTRAINT_NONE,task=x,pid=4242,uid=0,pid=77,uid=1000";
        assert_eq!(kills(&[rec(6, 1, named), rec(3, 2, kill)]), 0);
        // Lines user space writes into /dev/kmsg (facility LOG_USER) are never facts.
        assert_eq!(kills(&[rec(8 + 3, 2, kill)]), 0);
    }

    /// Older kernels' shapes: a header without its mode, a kill line without shmem-rss and
    /// without the "Out of memory: " prefix (4.x printed it on a line of its own).
    #[test]
    fn older_headers_and_kill_lines_are_facts_too() {
        let log = [
            rec(4, 1, "kwin_wayland: page allocation failure: order:2"),
            rec(
                3,
                2,
                "Killed process 2261 (java) total-vm:4404224kB, anon-rss:1869264kB, file-rss:0kB",
            ),
        ];
        let facts = parse(&log);
        let [KernelFact::AllocFailure(a), KernelFact::OomKill(o)] = &facts[..] else {
            panic!("{facts:?}")
        };
        assert_eq!(
            (a.comm.as_str(), a.order, a.mode.as_deref()),
            ("kwin_wayland", 2, None)
        );
        assert_eq!((o.pid, o.anon_kib, o.shmem_kib), (2261, 1_869_264, 0));
    }

    proptest! {
        /// What the log classifier calls a page-allocation failure, the fact parser reads as one:
        /// the lines a report quotes as evidence are the lines the findings rest on.
        #[test]
        fn every_classified_failure_is_a_fact(
            comm in "[ -~]{1,15}",
            order in 0u32..11,
            suffix in "\\PC{0,60}",
        ) {
            let m = format!("{comm}: page allocation failure: order:{order}{suffix}");
            let r = rec(4, 1, &m);
            prop_assume!(super::super::kmsg::classify(&r) == Some(super::super::kmsg::KernelEvent::PageAllocationFailure));
            let facts = parse(&[r]);
            prop_assert!(matches!(facts.first(), Some(KernelFact::AllocFailure(_))), "{m:?}: {facts:?}");
        }

        /// Any records parse without panicking, into at most one fact per record.
        #[test]
        fn parse_is_total(lines in proptest::collection::vec("\\PC{0,120}", 0..20), prio in 0u32..8) {
            let log: Vec<KmsgRecord> =
                lines.iter().enumerate().map(|(i, m)| rec(prio, i as u64, m)).collect();
            prop_assert!(parse(&log).len() <= log.len());
        }

        /// No line of a user-chosen shape (a task's segfault, trap or general protection report,
        /// with any task name and any file name) yields a fact or evidence, whatever the kernel
        /// lines around it: the attack of a binary named like an OOM kill line.
        #[test]
        fn a_user_chosen_name_after_a_fault_prefix_never_yields_a_finding(
            comm in "\\PC{1,15}",
            file in prop_oneof![
                "\\PC{0,200}",
                Just("x Out of memory: Killed process 4242 (evil) total-vm:1kB, anon-rss:99999999kB, file-rss:0kB, shmem-rss:0kB".to_string()),
                Just("NVRM: Xid (PCI:0000:0a:00): 79, pid=1, name=x, GPU has fallen off the bus.".to_string()),
                Just("evil: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER)".to_string()),
                Just("xe 0000:03:00.0: [drm] *ERROR* GT0: reset failed".to_string()),
            ],
            shape in 0usize..4,
            pid in 1u32..4_000_000,
            prio in 0u32..8,
        ) {
            let line = match shape {
                0 => format!("{comm}[{pid}]: segfault at 0 ip 0000000000401126 sp 00007ffd9f0c error 6 in {file}[401000+1000] likely on CPU 3 (core 3, socket 0)"),
                1 => format!("traps: {comm}[{pid}] general protection fault ip:401126 sp:7ffd error:0 in {file}[401000+1000]"),
                2 => format!("traps: {comm}[{pid}] trap int3 ip:401127 sp:7ffd error:0 in {file}[401000+1000]"),
                _ => format!("{comm}[{pid}]: unhandled level 2 translation fault (11) at 0x0, esr 0x92000006, in {file}[401000+1000]"),
            };
            let r = rec(prio, 1, &line);
            prop_assert_eq!(super::super::kmsg::classify(&r), None, "{}", line);
            prop_assert!(parse(&[r]).is_empty(), "{}", line);
        }

        /// A well-formed failure header is always found, with its order.
        #[test]
        fn headers_are_found(comm in "[a-z0-9_/.-]{1,15}", order in 0u32..11) {
            let m = format!("{comm}: page allocation failure: order:{order}, mode:0x820(GFP_ATOMIC), nodemask=(null)");
            let facts = parse(&[rec(4, 1, &m)]);
            prop_assert!(matches!(&facts[..], [KernelFact::AllocFailure(a)] if a.order == order && a.comm == comm));
        }
    }
}
