//! guard on real child processes, with host counters from capture and simulated trees.

mod common;
use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn seed() -> String {
    fixture("seed-2622").to_str().unwrap().to_string()
}

#[test]
fn stops_the_job_when_memory_is_below_the_floor() {
    let start = Instant::now();
    let out = run(&[
        "--root",
        &seed(),
        "guard",
        "--min-available",
        "50%",
        "--interval",
        "100ms",
        "--",
        "sleep",
        "30",
    ]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("MemAvailable 28.0 GiB is below the floor 32.0 GiB; sending SIGTERM"),
        "{err}"
    );
    assert!(
        err.contains(
            "rank 0 (pid 116400) on 0000:04:00.0: 186.8 MiB device-local, 8.5 GiB host-class"
        ),
        "{err}"
    );
    assert!(
        err.contains("peer_mirror: rank 0 (pid 116400, home 0000:03:00.0)"),
        "{err}"
    );
}

#[test]
fn driver_held_ceiling_and_json_events() {
    let out = run(&[
        "--root",
        &seed(),
        "guard",
        "--max-driver-held",
        "10GiB",
        "--min-available",
        "1%",
        "--json",
        "--interval",
        "100ms",
        "--",
        "sleep",
        "30",
    ]);
    assert_eq!(out.status.code(), Some(4));
    let line = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let ev: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ev["event"], "term");
    assert_eq!(ev["trip"]["reason"], "driver_held");
    assert_eq!(ev["trip"]["source"], "GPUActive");
    assert_eq!(ev["driver_held"], 27158118u64 * 1024);
    assert_eq!(ev["pids"].as_array().unwrap().len(), 1);
}

#[test]
fn action_none_only_warns_and_passes_the_exit_status() {
    let out = run(&[
        "--root",
        &seed(),
        "guard",
        "--min-available",
        "50%",
        "--action",
        "none",
        "--interval",
        "100ms",
        "--",
        "sh",
        "-c",
        "sleep 0.5; exit 5",
    ]);
    assert_eq!(
        out.status.code(),
        Some(5),
        "never signalled, exits as the job"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("warning only").count(),
        1,
        "one warning per crossing: {err}"
    );
    let out = run(&[
        "--root",
        &seed(),
        "guard",
        "--min-available",
        "1%",
        "--",
        "sh",
        "-c",
        "exit 6",
    ]);
    assert_eq!(out.status.code(), Some(6));
}

#[test]
fn sigkill_after_grace_when_sigterm_is_ignored() {
    // A root whose memory falls only after the job has set its trap (no race with the first sample).
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    let meminfo = |avail_gib: u64| {
        format!(
            "MemTotal: {} kB\nMemAvailable: {} kB\n",
            64 << 20,
            avail_gib << 20
        )
    };
    std::fs::write(root.join("proc/meminfo"), meminfo(60)).unwrap();
    let child = bin()
        .args([
            "--root",
            root.to_str().unwrap(),
            "guard",
            "--min-available",
            "50%",
            "--grace",
            "500ms",
            "--interval",
            "100ms",
            "--json",
            "--",
        ])
        .args(["sh", "-c", "trap '' TERM; sleep 30 & wait; sleep 30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    std::fs::write(root.join("proc/meminfo"), meminfo(10)).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["term", "kill"]
    );
}

#[test]
fn pid_mode_signals_only_the_guarded_pid() {
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let mut bystander = Command::new("sleep").arg("30").spawn().unwrap();
    let out = run(&[
        "--root",
        &seed(),
        "guard",
        "--min-available",
        "50%",
        "--interval",
        "100ms",
        "--pid",
        &victim.id().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        victim.wait().unwrap().code().is_none(),
        "victim got a signal"
    );
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "a process outside the guarded set is untouched"
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
    // A guarded pid that exits by itself: guard ends quietly with 0 and signals nothing else.
    let mut short = Command::new("sleep").arg("0.3").spawn().unwrap();
    let pid = short.id().to_string();
    let waiter = std::thread::spawn(move || short.wait().unwrap());
    let out = run(&[
        "--root",
        &seed(),
        "guard",
        "--min-available",
        "1%",
        "--interval",
        "100ms",
        "--pid",
        &pid,
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(waiter.join().unwrap().success());
    let out = run(&["guard", "--pid", "999999999"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn acts_when_a_live_simulation_crosses_the_floor() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("sim");
    let sim = live_sim(&tree, "8s", &[]);
    let start = Instant::now();
    let out = run(&[
        "--root",
        tree.to_str().unwrap(),
        "guard",
        "--min-available",
        "25%",
        "--interval",
        "100ms",
        "--",
        "sleep",
        "30",
    ]);
    let took = start.elapsed();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took > Duration::from_secs(1),
        "must not act before the simulated memory falls ({took:?})"
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("peer_mirror"));
    drop(sim);
}
