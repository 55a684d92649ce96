//! Hostile trees, vanishing processes, recorder crashes and a full disk.

use crate::common;
use common::*;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn churn_of_short_lived_processes_is_never_fatal() {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let churn = s.spawn(|| {
            let mut n = 0u32;
            while !stop.load(Ordering::SeqCst) {
                let kids: Vec<_> = (0..20)
                    .filter_map(|_| Command::new("true").spawn().ok())
                    .collect();
                for mut k in kids {
                    let _ = k.wait();
                }
                n += 20;
            }
            n
        });
        let tmp = tempfile::tempdir().unwrap();
        let ledger = tmp.path().join("churn.ledger");
        let rec = bin()
            .args([
                "record",
                "--all",
                "--interval",
                "50ms",
                "--duration",
                "3s",
                "-o",
                ledger.to_str().unwrap(),
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..15 {
            let doc = json_of(&["--json"], 0);
            let scan = &doc["scan"];
            assert!(
                doc["processes"].as_array().unwrap().len() as u64
                    <= scan["processes"].as_u64().unwrap()
            );
            assert!(
                scan["vanished"].as_u64().unwrap() + scan["unreadable"].as_u64().unwrap()
                    <= scan["processes"].as_u64().unwrap()
            );
        }
        let status = rec.wait_with_output().unwrap().status;
        stop.store(true, Ordering::SeqCst);
        let spawned = churn.join().unwrap();
        assert!(status.success());
        assert!(spawned >= 200, "churn ran ({spawned} processes)");
        let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
        let samples = doc["samples"].as_u64().unwrap();
        assert!(
            (30..=62).contains(&samples),
            "3 s at 50 ms: {samples} samples"
        );
    });
}

#[test]
fn sigkill_at_random_points_loses_at_most_the_last_interval() {
    let tmp = tempfile::tempdir().unwrap();
    // A fixed sequence: the same kill points every run, from before the file exists to well
    // into the recording.
    let mut seed = 0x2545_f491_u64;
    for i in 0..20 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let wait = if i < 2 { i * 5 } else { 150 + seed % 600 };
        let ledger = tmp.path().join(format!("k{i}.ledger"));
        let mut child = record_all(&ledger);
        std::thread::sleep(Duration::from_millis(wait));
        let killed_at = now_ms();
        child.kill().unwrap();
        child.wait().unwrap();
        if !ledger.exists() {
            continue; // killed before the file was renamed into place: nothing recorded
        }
        let conn = rusqlite::Connection::open_with_flags(
            &ledger,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('meta', 'samples', 'points')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 3, "run {i}: the file exists only with its schema");
        let (n, last): (i64, Option<i64>) = conn
            .query_row("SELECT COUNT(*), MAX(t_ms) FROM samples", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        drop(conn);
        if n == 0 {
            continue; // killed before the first sample: nothing to lose
        }
        let gap = killed_at as i64 - last.unwrap();
        assert!(
            gap <= 50 + 150,
            "run {i}: last sample {gap} ms before the kill"
        );
        let out = run(&["show", ledger.to_str().unwrap(), "--json"]);
        assert!(
            out.status.success(),
            "run {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn full_disk_stops_the_recording_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=320k", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)");
        return;
    }
    let ledger = mnt.join("full.ledger");
    let start = Instant::now();
    let out = record_job(
        Some(&fixture("seed-2622")),
        "10ms",
        &ledger,
        &["sleep", "8"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown = run(&["show", ledger.to_str().unwrap(), "--json"]);
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(
        err.contains("recording stopped")
            && err.contains("disk is full")
            && err.contains("safe in")
            && err.contains("the job ran on to its end"),
        "{err}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "samples were lost: the run must not look complete"
    );
    assert!(
        start.elapsed() >= Duration::from_secs(7),
        "the job is not killed because the disk is full"
    );
    assert!(
        shown.status.success(),
        "the file still opens: {}",
        String::from_utf8_lossy(&shown.stderr)
    );
}

#[test]
fn hostile_trees_are_contained() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("proc/10")).unwrap();
    std::os::unix::fs::symlink("fd", root.join("proc/10/fd")).unwrap(); // an fd dir that loops
    std::fs::create_dir_all(root.join("proc/11/fd")).unwrap();
    std::fs::create_dir_all(root.join("proc/11/fdinfo")).unwrap();
    std::fs::write(root.join("proc/11/comm"), "big\n").unwrap();
    std::os::unix::fs::symlink("/dev/dri/renderD128", root.join("proc/11/fd/3")).unwrap();
    std::fs::write(
        root.join("proc/11/fdinfo/3"),
        "drm-driver:\txe\n".repeat(400_000),
    )
    .unwrap(); // 5.6 MiB
    std::fs::write(
        root.join("proc/meminfo"),
        "MemTotal: 1024 kB\n".repeat(300_000),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("sys/class/drm/card0")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../../../..",
        root.join("sys/class/drm/card0/device"),
    )
    .unwrap();
    let doc = json_of(&["--root", root.to_str().unwrap(), "--json"], 0);
    assert_eq!(
        doc["host"]["mem_total"],
        serde_json::Value::Null,
        "an oversized meminfo is refused, not truncated"
    );
    assert!(
        doc["scan"]["issues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["path"] == "proc/10/fd" && i["reason"] == "link_loop"),
        "the looping fd dir is named: {doc}"
    );
    assert_eq!(
        doc["devices"][0]["id"], "card0",
        "a device link to '/' stays inside and names nothing"
    );
    let p = doc["processes"].as_array().unwrap();
    assert!(
        p.iter().all(|p| p["usage"].as_array().unwrap().is_empty()),
        "an oversized fdinfo is skipped"
    );
}

/// First and last sample times of a recording, through its -wal if it has one.
fn t_ms_range(ledger: &std::path::Path) -> (i64, i64) {
    let conn =
        rusqlite::Connection::open_with_flags(ledger, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row("SELECT MIN(t_ms), MAX(t_ms) FROM samples", [], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .unwrap()
}

#[test]
fn a_copy_of_the_ledger_alone_from_a_killed_recorder_misses_only_the_last_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("live.ledger");
    let mut child = bin()
        .args(["record", "--interval", "50ms", "-o"])
        .arg(&ledger)
        .args(["--", "sleep", "30"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(5500));
    child.kill().unwrap();
    child.wait().unwrap();
    // What a user copying the file away would take: the .ledger without its -wal.
    let copy = tmp.path().join("copy.ledger");
    std::fs::copy(&ledger, &copy).unwrap();
    let doc = json_of(&["show", copy.to_str().unwrap(), "--json"], 0);
    assert!(doc["samples"].as_u64().unwrap() >= 20, "{doc}");
    let (first, last) = t_ms_range(&ledger);
    let copy_last = first + (doc["duration_s"].as_f64().unwrap() * 1000.0).round() as i64;
    let lost = last - copy_last;
    assert!(
        lost <= 2000 + 1000,
        "the copy lacks the last {lost} ms of samples (checkpoints every 2 s)"
    );
}

/// Turns a small recording into one of `samples` more samples, 2 per second: host counters that
/// change every sample, rank 0's VRAM that changes every sample and its peer-fd GTT that grows in
/// 8 equal steps. Plain SQL, so millions of rows take seconds.
fn grow(ledger: &std::path::Path, samples: u64) {
    let conn = rusqlite::Connection::open(ledger).unwrap();
    let sql = "
INSERT INTO samples(t_ms, mem_total, mem_available, gpu_active, gpu_reclaim, unaccounted, gpu_source, processes)
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < :n)
SELECT (SELECT MAX(t_ms) FROM samples) + i * 500, 68719476736, 42949672960 - (i % 1000) * 397312,
       21474836480 + (i % 977) * 65536, NULL, 22548578304 + (i % 1000) * 4096, 'GPUActive', 2 FROM c;
INSERT OR REPLACE INTO points(series, sample, total, resident, shared)
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < (SELECT MAX(id) FROM samples))
SELECT (SELECT MIN(id) FROM series WHERE region = 'vram0'), i,
       9580232704 + (i % 64) * 1048576, 9580232704 + (i % 64) * 1048576, 0 FROM c;
INSERT OR REPLACE INTO points(series, sample, total, resident, shared)
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 8)
SELECT (SELECT MIN(id) FROM series WHERE region = 'gtt'), i * (SELECT MAX(id) FROM samples) / 10,
       9126912000 + i * 3250585600, 9126912000 + i * 3250585600, 0 FROM c;
UPDATE processes SET last_sample = (SELECT MAX(id) FROM samples);";
    conn.execute_batch(&sql.replace(":n", &samples.to_string()))
        .unwrap();
}

/// Runs gpuledger with `args` and returns its peak resident set (VmHWM, KiB), read from /proc
/// while it runs.
fn peak_rss_kib(args: &[&str]) -> u64 {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(kib) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "gpuledger {args:?}: {st}");
            return peak;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_million_samples_plot_show_and_diff_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("small.ledger");
    run_ok(&mut record_job(
        Some(&fixture("seed-2622")),
        "10ms",
        &small,
        &["sleep", "0.05"],
    ));
    let big = tmp.path().join("big.ledger");
    std::fs::copy(&small, &big).unwrap();
    grow(&big, 1_000_000);
    let html = tmp.path().join("big.html");
    let (b, h, s) = (
        big.to_str().unwrap(),
        html.to_str().unwrap(),
        small.to_str().unwrap(),
    );
    let limit_kib = 100 << 10;
    for args in [
        &["plot", b, "-o", h][..],
        &["show", b, "--json"],
        &["diff", b, s],
    ] {
        let peak = peak_rss_kib(args);
        assert!(
            peak > 0 && peak < limit_kib,
            "{args:?}: peak RSS {peak} KiB"
        );
    }
    let size = std::fs::metadata(&html).unwrap().len();
    assert!(size < 2 << 20, "the page is {size} bytes");
    let n: u64 = rusqlite::Connection::open(&big)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
        .unwrap();
    assert!(n > 1_000_000);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(&format!("{n} samples")),
        "every sample is counted"
    );
    let doc = json_of(&["show", b, "--json"], 0);
    assert_eq!(doc["samples"], n);
    let steps: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "stepwise_growth")
        .collect();
    assert!(
        steps.iter().any(|f| f["bytes"] == 3_250_585_600u64),
        "the 8 equal steps are still found: {steps:?}"
    );
}
