//! Post-mortem findings from the kernel log (issue 24 item 3): a simulated job that ran host
//! RAM out leaves order-0 page-allocation failures in `dev/kmsg`, and every view of that tree
//! shows them; public kernel log lines (the `kmsg-public` fixture) give OOM kills, NVIDIA Xids
//! and amdgpu resets with their severities; a capture keeps the evidence.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;

/// `simulate ddp-peer-mirror --ranks 8 --backing pinned` into `dir/s8`: the job is dead, its
/// ranks' page-allocation failures are in the kernel log.
fn dead_job(dir: &Path) -> String {
    let tree = dir.join("s8").to_str().unwrap().to_string();
    stdout_of(
        &[
            "simulate",
            "ddp-peer-mirror",
            "--ranks",
            "8",
            "--backing",
            "pinned",
            "--out",
            &tree,
        ],
        0,
    );
    tree
}

#[test]
fn a_dead_job_is_not_a_silent_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dead_job(dir.path());
    let doc = json_of(&["--root", &tree, "--json"], 0);
    let failures = findings_of(&doc, "kernel_page_alloc_failure");
    let pids: Vec<u64> = failures
        .iter()
        .map(|f| f["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, (4001..=4008).collect::<Vec<u64>>(), "one per rank");
    for f in &failures {
        assert_eq!(
            f["severity"], "critical",
            "a GPU driver's allocation failed: {f}"
        );
        let m = f["message"].as_str().unwrap();
        assert!(
            m.contains("order-0") && m.contains("GFP_HIGHUSER|__GFP_ZERO"),
            "{m}"
        );
        assert!(
            m.contains("at 3606.0 s after boot (20"),
            "with its wall-clock time: {m}"
        );
    }
    let table = stdout_of(&["--root", &tree], 0);
    assert!(!table.contains("Findings\n  none"), "{table}");
    assert!(
        table.contains("CRITICAL  kernel_page_alloc_failure: 8 findings, 8 processes"),
        "eight ranks' failures are one line: {table}"
    );
    let each = stdout_of(&["--root", &tree, "-v"], 0);
    assert!(each.contains("CRITICAL  kernel_page_alloc_failure: python3 (pid 4001)"));
    // --fail-on sees them.
    stdout_of(&["--root", &tree, "--fail-on", "critical"], 3);
    // doctor's verdict too.
    let doctor = stdout_of(&["doctor", "--root", &tree, "--fail-on", "warning"], 3);
    assert!(doctor.contains("Verdict: CRITICAL"), "{doctor}");
    // report: the findings, and the log under System logs instead of "not collected".
    let report = stdout_of(&["--root", &tree, "report"], 0);
    assert!(!report.contains("not collected"), "{report}");
    assert!(report.contains("`kernel_page_alloc_failure`"));
    assert!(report.contains("From the kernel log (dev/kmsg of the tree)"));
    // serve: the same findings in /snapshot.json and /metrics.
    let server = serve_root(Path::new(&tree), &[]);
    let body = server.get("/snapshot.json");
    let served: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(findings_of(&served, "kernel_page_alloc_failure").len(), 8);
    let metrics = server.get("/metrics");
    assert!(metrics.contains("kernel_page_alloc_failure"), "{metrics}");
}

#[test]
fn public_kernel_lines_become_findings_with_wall_clock_times() {
    let root = fixture("kmsg-public");
    let doc = json_of(&["--root", root.to_str().unwrap(), "--json"], 0);
    let failures = findings_of(&doc, "kernel_page_alloc_failure");
    assert_eq!(failures.len(), 2);
    assert!(
        failures.iter().all(|f| f["severity"] == "warning"),
        "neither earlyoom nor java is a GPU process"
    );
    let oom = findings_of(&doc, "kernel_oom_kill");
    assert_eq!(oom.len(), 1);
    assert_eq!(oom[0]["severity"], "critical");
    assert_eq!(oom[0]["pid"], 15784);
    assert_eq!(oom[0]["bytes"], (4288 + 3028) * 1024);
    let m = oom[0]["message"].as_str().unwrap();
    assert!(m.contains("anon-rss 4.2 MiB"), "{m}");
    // btime 1764780000 + 21518.050606 s.
    assert!(
        m.contains("at 21518.1 s after boot (2025-12-03T22:38:38Z)"),
        "{m}"
    );
    let gpu = findings_of(&doc, "kernel_gpu_error");
    let on = |dev: &str, what: &str| -> Vec<&Value> {
        gpu.iter()
            .copied()
            .filter(|f| f["device"] == dev && f["message"].as_str().unwrap().contains(what))
            .collect()
    };
    assert_eq!(
        on("0000:0a:00.0", "Xid 31 (GPU memory page fault")[0]["severity"],
        "warning"
    );
    assert_eq!(on("0000:0a:00.0", "Xid 62")[0]["severity"], "critical");
    let cleanup = on("0000:0a:00.0", "Xid 45");
    assert!(cleanup[0]["message"].as_str().unwrap().contains("3 times"));
    assert_eq!(
        on("0000:44:00.0", "fallen off the bus")[0]["severity"],
        "critical"
    );
    let amd = on("0000:28:00.0", "amdgpu error");
    assert_eq!(amd.len(), 1, "one finding per device and driver");
    assert_eq!(amd[0]["severity"], "critical", "the ring reset failed");
    assert_eq!(gpu.len(), 5, "{gpu:#?}");
    let explained = stdout_of(&["--explain", "kernel_gpu_error"], 0);
    let words = explained.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("79 (fallen off the bus)"), "{explained}");
}

#[test]
fn a_capture_keeps_the_kernel_evidence_and_the_boot_time() {
    let dir = tempfile::tempdir().unwrap();
    let public = fixture("kmsg-public").to_str().unwrap().to_string();
    let dead = dead_job(dir.path());
    let messages = |root: &str| -> Vec<String> {
        json_of(&["--root", root, "--json"], 0)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect()
    };
    for (i, root) in [public, dead].iter().enumerate() {
        let out = dir.path().join(format!("cap{i}"));
        let out = out.to_str().unwrap();
        stdout_of(&["--root", root, "capture", "-o", out], 0);
        let kept = std::fs::read_to_string(Path::new(out).join("dev/kmsg")).unwrap();
        assert!(!kept.contains("active_anon:"), "Mem-Info is not evidence");
        assert_eq!(
            messages(out),
            messages(root),
            "same findings from the capture"
        );
    }
    let kept = std::fs::read_to_string(dir.path().join("cap0/dev/kmsg")).unwrap();
    assert!(kept.contains("Out of memory: Killed process 15784"));
    let stat = std::fs::read_to_string(dir.path().join("cap0/proc/stat")).unwrap();
    assert_eq!(stat, "btime 1764780000\n");
}

#[test]
fn an_unreadable_kernel_log_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dead_job(dir.path());
    let kmsg = Path::new(&tree).join("dev/kmsg");
    std::fs::remove_file(&kmsg).unwrap();
    std::fs::create_dir(&kmsg).unwrap();
    let table = stdout_of(&["--root", &tree], 0);
    assert_eq!(table.matches("kernel log not read").count(), 1, "{table}");
    let doc = json_of(&["--root", &tree, "--json"], 0);
    let issues = doc["scan"]["issues"].as_array().unwrap();
    assert!(issues[0]["detail"]
        .as_str()
        .unwrap()
        .contains("no findings for page-allocation failures"));
}

/// Issue 31 item 2: a binary named like an OOM kill, an Xid or a page-allocation failure that
/// segfaults (or traps) leaves the kernel's own fault report with that name in the log; none of
/// it is a finding, and `--fail-on critical` (a Slurm prolog's gate) still passes. The same
/// text written from user space into /dev/kmsg (facility LOG_USER, priority 14) is no evidence
/// either; the real kill line beside them still is.
#[test]
fn a_segfaulting_binarys_name_forges_no_kernel_finding() {
    let (_dir, tree) = fixture_copy("seed-2605");
    let kmsg = tree.join("dev/kmsg");
    std::fs::create_dir_all(kmsg.parent().unwrap()).unwrap();
    let forged = [
        "6,9001,4000000000,-;x[4242]: segfault at 0 ip 0000000000401126 sp 00007ffd9f0c1e40 error 6 in x Out of memory: Killed process 4242 (evil) total-vm:1kB, anon-rss:99999999kB, file-rss:0kB, shmem-rss:0kB[401000+1000] likely on CPU 3 (core 3, socket 0)",
        "6,9002,4000000100,-;traps: x[4243] general protection fault ip:401126 sp:7ffd error:0 in NVRM: Xid (PCI:0000:44:00): 79, pid=1, name=x, GPU has fallen off the bus.[401000+1000]",
        "6,9003,4000000200,-;x[4244]: segfault at 0 ip 0000000000401126 sp 00007ffd error 6 in evil: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER|__GFP_ZERO), nodemask=(null)[401000+1000]",
        "14,9004,4000000300,-;Out of memory: Killed process 4245 (evil) total-vm:1kB, anon-rss:99999999kB, file-rss:0kB, shmem-rss:0kB",
        "14,9005,4000000400,-;NVRM: Xid (PCI:0000:44:00): 79, pid=1, name=x, GPU has fallen off the bus.",
    ];
    let mut text = std::fs::read_to_string(&kmsg).unwrap_or_default();
    for line in forged {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&kmsg, &text).unwrap();
    let root = tree.to_str().unwrap();
    let doc = json_of(&["--root", root, "--json"], 0);
    let kernel: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"].as_str().unwrap().starts_with("kernel_"))
        .collect();
    assert!(kernel.is_empty(), "forged: {kernel:?}");
    let out = run(&["--root", root, "--fail-on", "critical"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let real = "3,9006,4100000000,-;Out of memory: Killed process 4246 (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB\n";
    text.push_str(real);
    std::fs::write(&kmsg, &text).unwrap();
    let doc = json_of(&["--root", root, "--json"], 0);
    let kills = findings_of(&doc, "kernel_oom_kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    assert_eq!(kills[0]["pid"], 4246);
}
