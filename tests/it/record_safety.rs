//! No silent data loss (issue 31, item 7): a leftover `-wal` is not replayed into a new
//! recording, and `--force` onto a recording still being written is refused naming its writer (a
//! full disk: `hardening::full_disk_stops_the_recording_with_a_clear_message`), and samples the
//! recorder could not take are said with the interval it achieved.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn record(ledger: &Path, job: &[&str], force: bool) -> Command {
    let mut cmd = bin();
    cmd.arg("--root").arg(fixture("seed-2622"));
    cmd.args(["record", "--interval", "10ms", "-o"]).arg(ledger);
    if force {
        cmd.arg("--force");
    }
    cmd.arg("--").args(job);
    cmd
}

#[test]
fn a_leftover_wal_is_refused_not_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("run.ledger");
    std::fs::write(
        dir.path().join("run.ledger-wal"),
        [0x37, 0x7f, 0x06, 0x82, 0, 0],
    )
    .unwrap();
    let out = record(&ledger, &["true"], false).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("run.ledger-wal is left from an earlier recording"),
        "{err}"
    );
    assert!(!ledger.exists());
    let out = record(&ledger, &["true"], true).output().unwrap();
    assert!(
        out.status.success(),
        "--force discards it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn force_onto_a_recording_in_progress_is_refused_naming_its_writer() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("run.ledger");
    let mut first = record(&ledger, &["sleep", "5"], false)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut wal = ledger.as_os_str().to_owned();
    wal.push("-wal");
    while !Path::new(&wal).exists() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = record(&ledger, &["true"], true).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "is being written by gpuledger record (pid {})",
            first.id()
        )),
        "{err}"
    );
}

#[test]
fn samples_not_taken_are_said_with_the_interval_achieved() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("run.ledger");
    run_ok(&mut record(&ledger, &["sleep", "0.3"], false));
    let text = |ledger: &Path| stdout_of(&["show", ledger.to_str().unwrap()], 0);
    // The samples laid on the 10 ms grid asked for (a loaded test machine may itself miss one):
    // a recording that kept its cadence says nothing.
    let conn = rusqlite::Connection::open(&ledger).unwrap();
    let (n, first): (u64, i64) = conn
        .query_row("SELECT COUNT(*), MIN(id) FROM samples", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    conn.execute(
        "UPDATE samples SET t_ms = (SELECT MIN(t_ms) FROM samples) + (id - ?1) * 10",
        [first],
    )
    .unwrap();
    assert!(!text(&ledger).contains("missed"), "{}", text(&ledger));
    // A recorder stalled for 5 s after its third sample (a busy machine): the samples it could
    // not take are counted, not hidden behind the interval asked for.
    conn.execute(
        "UPDATE samples SET t_ms = t_ms + 5000 WHERE id > ?1",
        [first + 2],
    )
    .unwrap();
    drop(conn);
    let shown = text(&ledger);
    let line = shown.lines().find(|l| l.contains("missed")).unwrap_or("");
    assert!(line.contains("samples not taken"), "{shown}");
    let missed: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((480..=520).contains(&missed), "{missed} of {n} in {line}");
    assert!(line.contains("longest gap 5."), "{line}");
    let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    assert_eq!(doc["cadence"]["missed"], missed, "{}", doc["cadence"]);
}
