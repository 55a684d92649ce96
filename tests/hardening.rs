//! Hostile trees, vanishing processes, recorder crashes and a full disk.

mod common;
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
    let mut seed = 0x2545_f491_u64 ^ std::process::id() as u64;
    for i in 0..20 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let wait = 150 + seed % 600;
        let ledger = tmp.path().join(format!("k{i}.ledger"));
        let mut child = record_all(&ledger);
        std::thread::sleep(Duration::from_millis(wait));
        let killed_at = now_ms();
        child.kill().unwrap();
        child.wait().unwrap();
        let conn = rusqlite::Connection::open(&ledger).unwrap();
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
    let out = run(&[
        "--root",
        fixture("seed-2622").to_str().unwrap(),
        "record",
        "--interval",
        "10ms",
        "-o",
        ledger.to_str().unwrap(),
        "--",
        "sleep",
        "8",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown = run(&["show", ledger.to_str().unwrap(), "--json"]);
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(
        err.contains("recording stopped") && err.contains("intact up to the last sample"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "the job itself ran to its end");
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
