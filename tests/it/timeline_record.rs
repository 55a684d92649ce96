//! simulate → record → show → diff end to end, real `record -- CMD` of real children, a
//! recorder killed with SIGKILL, and hostile recording files.

use crate::common;
use common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `simulate … --live` and `record --root … --all` side by side; returns the recording.
fn record_live_sim(dir: &std::path::Path, name: &str, backing: &str) -> std::path::PathBuf {
    let tree = dir.join(name);
    let ledger = dir.join(format!("{name}.ledger"));
    let mut sim = live_sim(&tree, "6s", &["--backing", backing]);
    run_ok(&mut record_tree(&tree, "100ms", "6.5s", &ledger));
    assert!(sim.0.wait().unwrap().success());
    ledger
}

#[test]
fn pinned_run_shows_the_step_and_the_pinned_mirror_registered_only_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| record_live_sim(tmp.path(), "pinned", "pinned"));
        let b = s.spawn(|| record_live_sim(tmp.path(), "registered-only", "registered-only"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let show_a = json_of(&["show", a.to_str().unwrap(), "--json"], 0);
    let findings = show_a["findings"].as_array().unwrap();
    let steps: Vec<&Value> = findings
        .iter()
        .filter(|f| f["kind"] == "stepwise_growth")
        .collect();
    assert!(!steps.is_empty(), "{findings:#?}");
    assert!(
        steps.iter().all(|f| f["bytes"] == 3_174_400u64 * 1024),
        "{steps:#?}"
    );
    assert!(steps
        .iter()
        .any(|f| f["message"].as_str().unwrap().contains("3174400 KiB")));
    let pinned = |doc: &Value| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "peer_mirror" && f["severity"] == "critical")
    };
    assert!(pinned(&show_a), "pinned run must show the pinned mirror");
    assert!(findings.iter().any(|f| f["kind"] == "released_on_exit"));
    let show_b = json_of(&["show", b.to_str().unwrap(), "--json"], 0);
    assert!(
        !pinned(&show_b),
        "registered-only run must not show a pinned mirror"
    );
    let peaks = show_a["peaks"].as_array().unwrap();
    assert!(peaks
        .iter()
        .any(|p| p["rank"] == 1 && p["home"] == true && p["device"] == "0000:04:00.0"));

    let diff = json_of(
        &["diff", a.to_str().unwrap(), b.to_str().unwrap(), "--json"],
        0,
    );
    let verdict = diff["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("A shows the peer-mirror pinning"),
        "{verdict}"
    );
    let text = stdout_of(&["diff", a.to_str().unwrap(), b.to_str().unwrap()], 0);
    assert!(
        text.contains("driver-held host memory, peak (GPUActive)")
            && text.contains("MemAvailable, low point"),
        "{text}"
    );
}

#[test]
fn record_runs_a_real_command_and_exits_with_its_status() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("run.ledger");
    let out = record_job(None, "50ms", &ledger, &["sh", "-c", "sleep 0.3; exit 7"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    assert_eq!(doc["exit_code"], 7);
    assert_eq!(doc["command"][0], "sh");
    assert!(doc["samples"].as_u64().unwrap() >= 3, "{doc}");
    let missing = run(&[
        "record",
        "-o",
        tmp.path().join("x.ledger").to_str().unwrap(),
        "--",
        "/no/such/program",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/program"));
}

#[test]
fn record_forwards_sigterm_to_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("sig.ledger");
    let child = record_job(None, "50ms", &ledger, &["sleep", "30"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait_with_output().unwrap().status;
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "sleep was killed by the forwarded SIGTERM"
    );
    let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    assert_eq!(doc["signal"], 15);
}

#[test]
fn recorder_killed_with_sigkill_leaves_a_readable_file() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("killed.ledger");
    let mut child = record_all(&ledger);
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    assert!(doc["samples"].as_u64().unwrap() >= 2, "{doc}");
    assert_eq!(doc["exit_code"], Value::Null);
}

#[test]
fn foreign_or_truncated_files_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let text = tmp.path().join("notes.ledger");
    std::fs::write(&text, "hello").unwrap();
    let foreign = tmp.path().join("foreign.ledger");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    let good = tmp.path().join("good.ledger");
    assert!(run(&[
        "record",
        "--all",
        "--duration",
        "200ms",
        "--interval",
        "50ms",
        "-o",
        good.to_str().unwrap()
    ])
    .status
    .success());
    let bytes = std::fs::read(&good).unwrap();
    let truncated = tmp.path().join("truncated.ledger");
    std::fs::write(&truncated, &bytes[..bytes.len().min(600)]).unwrap();
    for f in [&text, &foreign, &truncated] {
        let out = run(&["show", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", f.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(f.to_str().unwrap()), "{err}");
        assert!(
            err.contains("not a gpuledger recording") || err.contains("recording"),
            "{err}"
        );
    }
    let exists = run(&[
        "record",
        "--all",
        "--duration",
        "100ms",
        "-o",
        good.to_str().unwrap(),
    ]);
    assert_eq!(exists.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&exists.stderr).contains("already exists"));
}

#[test]
fn demo_is_quick_and_names_the_bad_run() {
    let start = Instant::now();
    let out = stdout_of(&["demo"], 0);
    assert!(start.elapsed() < Duration::from_secs(15));
    assert!(
        out.contains("CRITICAL  peer_mirror: rank 0 (pid 4001, home 0000:03:00.0)"),
        "{out}"
    );
    assert!(out.contains("grew 6 times by exactly 3174400 KiB"), "{out}");
    assert!(out.contains("A shows the peer-mirror pinning"), "{out}");
}

#[test]
fn simulate_writes_a_tree_the_snapshot_reads() {
    let tmp = tempfile::tempdir().unwrap();
    for (scenario, kind) in [
        ("ddp-peer-mirror", Some("peer_mirror")),
        ("single-gpu", None),
        ("amdgpu-tp", None),
        ("leak", None),
    ] {
        let dir = tmp.path().join(scenario);
        stdout_of(&["simulate", scenario, "--out", dir.to_str().unwrap()], 0);
        let doc = json_of(&["--root", dir.to_str().unwrap(), "--json"], 0);
        let kinds: Vec<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        match kind {
            Some(k) => assert!(kinds.contains(&k), "{scenario}: {kinds:?}"),
            None => assert!(!kinds.contains(&"peer_mirror"), "{scenario}: {kinds:?}"),
        }
        assert!(
            !doc["processes"].as_array().unwrap().is_empty(),
            "{scenario}"
        );
    }
    let dir = tmp.path().join("four");
    assert!(run(&[
        "simulate",
        "ddp-peer-mirror",
        "--ranks",
        "4",
        "--out",
        dir.to_str().unwrap()
    ])
    .status
    .success());
    let doc = json_of(&["--root", dir.to_str().unwrap(), "--json"], 0);
    assert_eq!(
        doc["processes"].as_array().unwrap().len(),
        0,
        "4 ranks, written as they die: their processes are gone"
    );
    let bad = run(&["simulate", "nope", "--out", dir.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("possible values: ddp-peer-mirror"));
}

/// A tree's `dev/kmsg` gains a failure while `record` watches it: the line is recorded with its
/// kind (the tree stands in for the machine's log, which a test must not write to).
#[test]
fn kernel_log_lines_in_the_window_are_recorded() {
    let (_tmp, tree) = fixture_copy("seed-2622");
    let kmsg = tree.join("dev/kmsg");
    std::fs::create_dir_all(kmsg.parent().unwrap()).unwrap();
    std::fs::write(
        &kmsg,
        "6,1,1000000,-;xe 0000:03:00.0: [drm] Tile0: GT0: ready\n",
    )
    .unwrap();
    let ledger = tree.join("k.ledger");
    let recorder = record_tree(&tree, "100ms", "1500ms", &ledger)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let line =
        "kwin_wayland: page allocation failure: order:0, mode:0x40cc0(GFP_KERNEL|__GFP_COMP)";
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&kmsg)
        .unwrap();
    std::io::Write::write_all(&mut f, format!("4,2,2000000,-;{line}\n").as_bytes()).unwrap();
    drop(f);
    let out = recorder.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    let lines = doc["kernel_log"].as_array().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l["kind"] == "page_allocation_failure" && l["message"] == line),
        "{lines:?}"
    );
}

/// The layout of a recording written before `processes.labels` and `kernel_log` existed, when the
/// files still said schema version 1.
const SCHEMA_V1_OLD: &str = "
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE samples(id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, mem_total INTEGER,
  mem_available INTEGER, gpu_active INTEGER, gpu_reclaim INTEGER, unaccounted INTEGER,
  gpu_source TEXT, processes INTEGER NOT NULL);
CREATE TABLE processes(pid INTEGER PRIMARY KEY, comm TEXT NOT NULL, cmdline TEXT NOT NULL,
  rank INTEGER, local_rank INTEGER, env TEXT NOT NULL, first_sample INTEGER NOT NULL,
  last_sample INTEGER NOT NULL);
CREATE TABLE devices(id TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE series(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, device TEXT NOT NULL,
  region TEXT NOT NULL, class TEXT NOT NULL, UNIQUE(pid, device, region));
CREATE TABLE points(series INTEGER NOT NULL, sample INTEGER NOT NULL, total INTEGER,
  resident INTEGER, shared INTEGER, PRIMARY KEY(series, sample)) WITHOUT ROWID;
CREATE TABLE findings(kind TEXT NOT NULL, pid INTEGER NOT NULL, device TEXT NOT NULL,
  peer TEXT NOT NULL, severity TEXT NOT NULL, rank INTEGER, bytes_peak INTEGER NOT NULL,
  backing TEXT, source TEXT, message TEXT NOT NULL, first_sample INTEGER NOT NULL,
  last_sample INTEGER NOT NULL, PRIMARY KEY(kind, pid, device, peer));
INSERT INTO meta VALUES ('schema_version', '1'), ('command', '[\"python\",\"train.py\"]'),
  ('root', '/'), ('interval_ms', '500'), ('started_ms', '1700000000000'), ('exit_code', '0');
INSERT INTO samples(t_ms, mem_total, mem_available, gpu_active, unaccounted, gpu_source, processes)
  VALUES (1700000000000, 68719476736, 60000000000, NULL, 1073741824, NULL, 1),
         (1700000000500, 68719476736, 50000000000, NULL, 9663676416, NULL, 1),
         (1700000001000, 68719476736, 51000000000, NULL, 9663676416, NULL, 1);
INSERT INTO processes VALUES (4242, 'python', 'python train.py', 0, 0, '{\"RANK\":\"0\"}', 1, 3);
INSERT INTO series VALUES (1, 4242, '0000:03:00.0', 'vram0', 'device'),
                          (2, 4242, '0000:04:00.0', 'gtt', 'host');
INSERT INTO points VALUES (1, 1, 8589934592, 8589934592, 0), (2, 1, 0, 0, 0),
                          (2, 2, 8589934592, 8589934592, 0);
";

/// Writes a version-1 recording from before `labels` (also a fuzz seed: see fuzz/README.md).
fn old_recording(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V1_OLD).unwrap();
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn version_1_recordings_open_unchanged_and_newer_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let old = tmp.path().join("old.ledger");
    old_recording(&old);
    if let Some(dir) = std::env::var_os("GPULEDGER_WRITE_CORPUS") {
        std::fs::copy(
            &old,
            std::path::Path::new(&dir).join("v1-before-labels.ledger"),
        )
        .unwrap();
    }
    let before = std::fs::read(&old).unwrap();
    let doc = json_of(&["show", old.to_str().unwrap(), "--json"], 0);
    assert_eq!(doc["samples"], 3, "{doc}");
    assert_eq!(doc["driver_held_peak"], 9663676416u64, "{doc}");
    let peaks = doc["peaks"].as_array().unwrap();
    assert!(
        peaks
            .iter()
            .any(|p| p["device"] == "0000:04:00.0" && p["host_peak"] == 8589934592u64),
        "{peaks:?}"
    );
    assert!(run(&[
        "plot",
        old.to_str().unwrap(),
        "-o",
        tmp.path().join("old.html").to_str().unwrap()
    ])
    .status
    .success());
    assert_eq!(
        std::fs::read(&old).unwrap(),
        before,
        "reading never writes the file"
    );
    assert_eq!(
        files_in(tmp.path()),
        ["old.html", "old.ledger"],
        "nor beside it"
    );

    let newer = tmp.path().join("newer.ledger");
    std::fs::copy(&old, &newer).unwrap();
    let conn = rusqlite::Connection::open(&newer).unwrap();
    conn.execute(
        "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);
    let out = run(&["show", newer.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(newer.to_str().unwrap())
            && err.contains("schema version 99")
            && err.contains("upgrade gpuledger"),
        "{err}"
    );

    let bare = tmp.path().join("bare.ledger");
    rusqlite::Connection::open(&bare)
        .unwrap()
        .execute_batch("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);")
        .unwrap();
    let out = run(&["diff", bare.to_str().unwrap(), old.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{} is not a gpuledger recording (missing tables: samples",
            bare.display()
        )),
        "{err}"
    );
}

#[test]
fn a_finished_recording_is_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("one.ledger");
    run_ok(&mut record_job(None, "50ms", &ledger, &["sleep", "0.3"]));
    assert_eq!(files_in(tmp.path()), ["one.ledger"]);
    let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    assert!(doc["samples"].as_u64().unwrap() >= 3, "{doc}");
    assert_eq!(
        files_in(tmp.path()),
        ["one.ledger"],
        "show writes nothing beside it"
    );
    let moved = tmp.path().join("moved é ?#%.ledger"); // characters a file: URI reserves
    std::fs::rename(&ledger, &moved).unwrap();
    assert_eq!(
        json_of(&["show", moved.to_str().unwrap(), "--json"], 0),
        doc
    );
}

#[test]
fn a_recording_claiming_billions_of_samples_allocates_nothing_for_them() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("claims.ledger");
    old_recording(&f);
    let conn = rusqlite::Connection::open(&f).unwrap();
    conn.execute_batch(
        "INSERT INTO samples(id, t_ms, processes) VALUES (9000000000000, 1700000002000, 1);
         INSERT INTO points VALUES (2, 8000000000000, 1, 17179869184, 0);
         UPDATE processes SET last_sample = 9223372036854775807;",
    )
    .unwrap();
    drop(conn);
    let start = Instant::now();
    let doc = json_of(&["show", f.to_str().unwrap(), "--json"], 0);
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(doc["samples"], 4, "{doc}");
    let html = tmp.path().join("claims.html");
    assert!(
        run(&["plot", f.to_str().unwrap(), "-o", html.to_str().unwrap()])
            .status
            .success()
    );
    assert!(std::fs::metadata(&html).unwrap().len() < 1 << 20);
}

/// A version-2 recording: its `severity` column is the worst over time.
fn v2_recording(path: &std::path::Path, backing: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V1_OLD).unwrap();
    conn.execute_batch(&format!(
        "UPDATE meta SET value = '2' WHERE key = 'schema_version';
         INSERT INTO findings VALUES ('peer_mirror', 4242, '0000:03:00.0', '0000:04:00.0', 'warning',
           0, 8589934592, '{backing}', 'unaccounted', 'mirror', 1, 3);"
    ))
    .unwrap();
}

#[test]
fn version_2_findings_take_the_severity_of_their_peak_and_unknown_values_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let v2 = tmp.path().join("v2.ledger");
    v2_recording(&v2, "not_pinned");
    let doc = json_of(&["show", v2.to_str().unwrap(), "--json"], 0);
    let f = &doc["recorded_findings"][0];
    assert_eq!(
        (&f["severity"], &f["worst_severity"], &f["backing"]),
        (
            &serde_json::json!("info"),
            &serde_json::json!("warning"),
            &serde_json::json!("not_pinned")
        ),
        "{doc}"
    );
    assert_eq!(doc["driver_held_parts"]["counter"], "unaccounted", "{doc}");
    assert_eq!(doc["driver_held_peak"], 9663676416u64, "{doc}");
    let text = stdout_of(&["show", v2.to_str().unwrap()], 0);
    assert!(
        text.contains("WARNING   peer_mirror")
            && text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains("warning at another moment of that span, info at the peak"),
        "{text}"
    );

    let odd = tmp.path().join("odd.ledger");
    v2_recording(&odd, "half_pinned");
    let out = run(&["diff", odd.to_str().unwrap(), v2.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(odd.to_str().unwrap()) && err.contains("unknown backing \"half_pinned\""),
        "{err}"
    );
}
