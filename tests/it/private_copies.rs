//! A user's "recording" read by root (issue 31, item 1): nothing is copied before the file is
//! known to be an SQLite database opened without following a link, private copies are 0700/0600
//! whatever the umask and off the disk before the first row is read, and errors say what
//! happened without echoing the file.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A small real recording at `dir/name`.
fn recording(dir: &Path, name: &str) -> PathBuf {
    let ledger = dir.join(name);
    run_ok(&mut record_job(
        Some(&fixture("seed-2622")),
        "10ms",
        &ledger,
        &["sleep", "0.05"],
    ));
    ledger
}

/// `gpuledger show PATH --json` under umask 000 with `TMPDIR=tmp`.
fn show_under_umask_000(path: &Path, tmp: &Path) -> Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$0\" show \"$1\" --json")
        .arg(env!("CARGO_BIN_EXE_gpuledger"))
        .arg(path)
        .env("TMPDIR", tmp)
        .output()
        .unwrap()
}

/// Copies `from` to `to` together with a `-wal` holding one meta row the file itself lacks
/// (the state of a recording whose recorder was killed before a checkpoint).
fn with_live_wal(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    let conn = rusqlite::Connection::open(to).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('note', 'only in the wal')",
        [],
    )
    .unwrap();
    let keep = to.with_extension("kept");
    std::fs::copy(to, &keep).unwrap();
    let mut wal = to.as_os_str().to_owned();
    wal.push("-wal");
    let mut kept_wal = keep.as_os_str().to_owned();
    kept_wal.push("-wal");
    std::fs::copy(&wal, &kept_wal).unwrap();
    drop(conn);
    std::fs::rename(&keep, to).unwrap();
    std::fs::rename(&kept_wal, &wal).unwrap();
}

#[test]
fn a_symlink_to_a_secret_with_a_wal_beside_it_is_never_copied() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, "SQLite format 3\0root-only-secret").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = tmp.path().join("run.ledger");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    std::fs::write(tmp.path().join("run.ledger-wal"), "").unwrap();
    std::fs::write(tmp.path().join("run.ledger-wal"), [0x37, 0x7f, 0x06, 0x82]).unwrap();
    let sandbox = tempfile::tempdir().unwrap();
    let out = show_under_umask_000(&link, sandbox.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("symbolic link"), "{err}");
    assert!(!err.contains("root-only-secret"), "{err}");
    assert_eq!(std::fs::read_dir(sandbox.path()).unwrap().count(), 0);
}

#[test]
fn a_recording_with_its_wal_is_read_through_a_copy_that_is_gone_before_the_read() {
    let tmp = tempfile::tempdir().unwrap();
    let closed = recording(tmp.path(), "closed.ledger");
    let open = tmp.path().join("open.ledger");
    with_live_wal(&closed, &open);
    let sandbox = tempfile::tempdir().unwrap();
    let out = show_under_umask_000(&open, sandbox.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("not closed cleanly"), "{err}");
    assert_eq!(std::fs::read_dir(sandbox.path()).unwrap().count(), 0);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = doc.to_string();
    assert!(
        text.contains("sleep"),
        "the recording was read: {text:.300}"
    );
}

#[test]
fn leftovers_of_a_killed_reader_are_removed_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let closed = recording(tmp.path(), "closed.ledger");
    let open = tmp.path().join("open.ledger");
    with_live_wal(&closed, &open);
    let sandbox = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let left = sandbox.path().join(format!("gpuledger-read-{dead}-AbC123"));
    std::fs::create_dir(&left).unwrap();
    std::fs::write(left.join("r.ledger"), vec![0u8; 1 << 20]).unwrap();
    let out = show_under_umask_000(&open, sandbox.path());
    assert!(out.status.success());
    assert!(!left.exists(), "a dead reader's copy is removed");
}

#[test]
fn truncated_and_unreadable_recordings_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = recording(tmp.path(), "run.ledger");
    let cut = tmp.path().join("cut.ledger");
    let bytes = std::fs::read(&ledger).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).unwrap();
    let out = run(&["show", cut.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("damaged") && err.contains("truncated"),
        "{err}"
    );
    let text = tmp.path().join("notes.ledger");
    std::fs::write(&text, "password=hunter2\n").unwrap();
    let err = String::from_utf8_lossy(&run(&["show", text.to_str().unwrap()]).stderr).to_string();
    assert!(err.contains("not an SQLite database"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&ledger, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_gpuledger"))
        .args(["show", ledger.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if rustix::process::geteuid().is_root() {
        assert!(err.contains("Permission denied"), "{err}");
        assert!(!err.contains("not a gpuledger recording"), "{err}");
    }
}

/// Runs `gpuledger ARGS` under umask 000 with `TMPDIR=tmp` and returns its output.
fn under_umask_000(args: &[&str], tmp: &Path) -> Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_gpuledger"))
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .unwrap()
}

/// The mode table of issue 31 under umask 000: what a job sees of the scratch space of a
/// `record` reading a capture archive (the unpacked root, the marker file and its directory),
/// and the files each command leaves for the user (capture's archive, the recording).
#[test]
fn every_scratch_space_is_private_under_umask_000() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let archive = tmp.path().join("seed.tar.zst");
    let seed = fixture("seed-2622");
    let (seed, archive_s) = (seed.to_str().unwrap(), archive.to_str().unwrap());
    let out = under_umask_000(&["--root", seed, "capture", "-o", archive_s], &scratch);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ledger = tmp.path().join("run.ledger");
    let probe = "stat -c '%a %F %n' \"$(dirname \"$GPULEDGER_MARKERS\")\" \"$GPULEDGER_MARKERS\" \
                 \"$TMPDIR\"/gpuledger-* > \"$0\"";
    let table = tmp.path().join("modes.txt");
    let out = under_umask_000(
        &[
            "--root",
            archive_s,
            "record",
            "--interval",
            "20ms",
            "-o",
            ledger.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            probe,
            table.to_str().unwrap(),
        ],
        &scratch,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = std::fs::read_to_string(&table).unwrap();
    let rows: Vec<(&str, &str)> = table.lines().filter_map(|l| l.split_once(' ')).collect();
    let kinds: Vec<&str> = ["root", "markers"]
        .into_iter()
        .filter(|k| table.contains(&format!("gpuledger-{k}-")))
        .collect();
    assert_eq!(kinds, ["root", "markers"], "scratch spaces seen:\n{table}");
    for (mode, what) in &rows {
        let want = if what.starts_with("directory") {
            "700"
        } else {
            "600"
        };
        assert_eq!(*mode, want, "{what}\n{table}");
    }
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode(&archive),
        0o600,
        "a capture holds the machine's command lines"
    );
    assert_eq!(
        mode(&ledger),
        0o644,
        "a recording is never writable by others"
    );
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().collect();
    assert!(left.is_empty(), "scratch space left behind: {left:?}");
}

#[test]
fn a_file_that_is_no_archive_is_named_and_never_quoted() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("passwd");
    std::fs::write(
        &secret,
        "root:x:0:0:secret-line:/root:/bin/bash\n".repeat(40),
    )
    .unwrap();
    let damaged = tmp.path().join("cut.tar.zst");
    let seed = fixture("seed-2605");
    run_ok(
        bin()
            .args(["--root", seed.to_str().unwrap(), "capture", "-o"])
            .arg(&damaged),
    );
    let bytes = std::fs::read(&damaged).unwrap();
    let plain = zstd::decode_all(&bytes[..]).unwrap();
    let mut cut = plain[..plain.len() / 2].to_vec();
    cut.extend(b"secret-line ".repeat(100));
    let cut_path = tmp.path().join("cut.tar");
    std::fs::write(&cut_path, &cut).unwrap();
    for (path, says) in [
        (&secret, "neither a capture directory nor a capture archive"),
        (&cut_path, "is damaged after entry"),
    ] {
        let out = run(&["--root", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(says) && err.contains(path.to_str().unwrap()),
            "{err}"
        );
        assert!(
            !err.contains("secret-line"),
            "the file's bytes were echoed: {err}"
        );
    }
}
