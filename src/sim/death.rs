//! What a machine shows after the simulated job ran host RAM out, as a real one would: the
//! kernel's order-0 page-allocation failures (warn_alloc in mm/page_alloc.c: the header, the
//! stack of the failing task, one Mem-Info), the runtime's error in the rank's output, and the
//! launcher's teardown (torchrun sends the other ranks SIGTERM and exits 1).

use crate::sources::kmsg::KmsgRecord;

/// The simulated machine had been up this long when the job started (kernel log clock).
const BOOT_S: f64 = 3600.0;
/// First sequence number of the job's kernel records (earlier boot records are not kept).
const FIRST_SEQ: u64 = 1842;
/// KERN_WARNING: warn_alloc's level, and dump_stack's default.
const WARNING: u32 = 4;
/// What PyTorch prints for a Level Zero failure (as in intel/compute-runtime#952).
pub(super) const RUNTIME_ERROR: &str =
    "RuntimeError: level_zero backend failed with error: 40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)";
/// Lines of output kept in the job-end record.
const TAIL_LINES: usize = 30;

/// The kernel-log clock (µs since boot) `t_s` seconds into the run.
pub(super) fn boot_usec(t_s: f64) -> u64 {
    ((BOOT_S + t_s.max(0.0)) * 1e6) as u64
}

/// MemFree when the allocations fail: below the min watermark, so order-0 requests fail.
const FREE_KIB: u64 = 61_440;

/// The processes that failed, and when.
#[derive(Debug, Clone, Copy)]
pub(super) struct Failure {
    /// When, seconds into the run.
    pub t_s: f64,
    /// Pids of the ranks, rank 0 first (all of them pin at once, so all of them fail).
    pub first_pid: u32,
    /// Ranks.
    pub ranks: u32,
    /// The launcher's pid.
    pub launcher: u32,
}

/// The kernel records of the failure, oldest first.
pub(super) fn kernel_records(f: &Failure) -> Vec<KmsgRecord> {
    let mut lines: Vec<String> = Vec::new();
    for r in 0..f.ranks {
        let pid = f.first_pid + r;
        lines.push(
            "python3: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER|__GFP_ZERO), \
             nodemask=(null),cpuset=/,mems_allowed=0"
                .into(),
        );
        lines.push(format!(
            "CPU: {} UID: 1000 PID: {pid} Comm: python3 Not tainted 7.1.3-gpuledger-sim #1",
            r % 16
        ));
        lines.push("Hardware name: gpuledger simulated machine".into());
        lines.extend(STACK.iter().map(|s| s.to_string()));
        if r == 0 {
            lines.extend(mem_info(FREE_KIB));
        }
    }
    let start = boot_usec(f.t_s);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, message)| KmsgRecord {
            prio: WARNING,
            seq: FIRST_SEQ + i as u64,
            usec: start + 7 * i as u64,
            message,
            dict: Vec::new(),
        })
        .collect()
}

/// The failing task's stack: TTM populating a buffer object's pages for a bind.
const STACK: [&str; 20] = [
    "Call Trace:",
    " <TASK>",
    " dump_stack_lvl+0x5d/0x80",
    " warn_alloc+0x164/0x190",
    " __alloc_pages_slowpath.constprop.0+0xc6a/0xd90",
    " __alloc_pages_noprof+0x31c/0x350",
    " alloc_pages_mpol_noprof+0xd7/0x1e0",
    " ttm_pool_alloc_page+0x3f/0x130 [ttm]",
    " ttm_pool_alloc+0x2bd/0x690 [ttm]",
    " ttm_tt_populate+0xa8/0x130 [ttm]",
    " ttm_bo_handle_move_mem+0x16e/0x180 [ttm]",
    " ttm_bo_validate+0xc5/0x1a0 [ttm]",
    " xe_bo_validate+0x51/0x90 [xe]",
    " xe_vm_bind_ioctl+0x9f2/0xd60 [xe]",
    " drm_ioctl_kernel+0xad/0x100",
    " drm_ioctl+0x277/0x4f0",
    " __x64_sys_ioctl+0x94/0xd0",
    " do_syscall_64+0x82/0x190",
    " entry_SYSCALL_64_after_hwframe+0x76/0x7e",
    " </TASK>",
];

fn mem_info(free_kib: u64) -> Vec<String> {
    vec![
        "Mem-Info:".into(),
        format!(
            "active_anon:0 inactive_anon:0 isolated_anon:0 free:{} free_pcp:0 free_cma:0",
            free_kib / 4
        ),
        format!("Node 0 Normal free:{free_kib}kB boost:0kB min:67584kB low:84480kB high:101376kB"),
    ]
}

/// The last lines of the job's output: the rank's traceback, the launcher's teardown.
pub(super) fn output_tail(f: &Failure) -> Vec<String> {
    let mut out = vec![
        "[rank0]: Traceback (most recent call last):".to_string(),
        "[rank0]:   File \"/work/train.py\", line 212, in <module>".into(),
        "[rank0]:     loss.backward()".into(),
        format!("[rank0]: {RUNTIME_ERROR}"),
    ];
    let api = "torch/distributed/elastic/multiprocessing/api.py";
    for r in 1..f.ranks {
        out.push(format!(
            "W {api}] Sending process {} closing signal SIGTERM",
            f.first_pid + r
        ));
    }
    out.push(format!(
        "E {api}] failed (exitcode: 1) local_rank: 0 (pid: {}) of binary: /usr/bin/python3",
        f.first_pid
    ));
    out.push("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:".into());
    out.push("train.py FAILED".into());
    out.push(format!(
        "  rank      : 0 (local_rank: 0)   exitcode  : 1 (pid: {})",
        f.first_pid
    ));
    out.push(format!(
        "torchrun (pid {}) exited with status 1",
        f.launcher
    ));
    let skip = out.len().saturating_sub(TAIL_LINES);
    out.split_off(skip)
}
