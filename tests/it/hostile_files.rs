//! Hostile archives and recordings, built here, run through the real binary: each attack is held to
//! its bound (peak RSS, time, files left behind, a canary outside untouched).

use crate::common;
use common::*;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// What one run of the binary cost.
struct Cost {
    /// Peak resident set (VmHWM), KiB.
    peak_kib: u64,
    elapsed: Duration,
    ok: bool,
    stderr: String,
}

/// Runs gpuledger with `args` and `TMPDIR=tmp`, sampling its VmHWM while it runs.
fn cost(args: &[&str], tmp: &Path) -> Cost {
    let start = Instant::now();
    let mut child = bin()
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        err_pipe.read_to_string(&mut s).unwrap();
        s
    });
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let st = loop {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(kib) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "gpuledger {args:?} hangs"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    Cost {
        peak_kib,
        elapsed: start.elapsed(),
        ok: st.success(),
        stderr: reader.join().unwrap(),
    }
}

fn entries_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// A zstd-compressed tar at `path`, built by `build`.
fn zst_tar(
    path: &Path,
    build: impl FnOnce(&mut tar::Builder<zstd::stream::AutoFinishEncoder<std::fs::File>>),
) {
    let enc = zstd::Encoder::new(std::fs::File::create(path).unwrap(), 3)
        .unwrap()
        .auto_finish();
    let mut b = tar::Builder::new(enc);
    build(&mut b);
    b.into_inner().unwrap();
}

fn header(kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    h
}

#[test]
fn a_symlink_name_bomb_is_refused_in_bounded_memory() {
    // 60,000 links whose names and targets (3.8 KB each, under the per-name cap) would be held
    // until the end: 460 MB of link text without a total.
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("bomb.tar.zst");
    let long = |c: &str| vec![c.repeat(200); 19].join("/");
    let (name, target) = (long("a"), long("b"));
    zst_tar(&archive, |b| {
        for i in 0..60_000 {
            let mut h = header(tar::EntryType::Symlink, 0);
            b.append_link(&mut h, format!("{name}{i}"), &target)
                .unwrap();
        }
    });
    let sandbox = tempfile::tempdir().unwrap();
    let c = cost(
        &["--root", archive.to_str().unwrap(), "--json"],
        sandbox.path(),
    );
    assert!(!c.ok);
    assert!(
        c.stderr.contains("symlink names and targets exceed"),
        "{}",
        c.stderr
    );
    assert!(c.peak_kib < 100 << 10, "peak RSS {} KiB", c.peak_kib);
    assert_eq!(entries_in(sandbox.path()), 0, "nothing left in TMPDIR");
    eprintln!("symlink bomb: peak {} KiB in {:?}", c.peak_kib, c.elapsed);
}

/// One pax record, `"<len> <key>=<value>\n"`, its length counting itself.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

#[test]
fn pax_sizes_are_counted_and_nothing_is_written() {
    // The shape: ustar size 0 and a pax `size=61440` per entry, 1.2 GiB in all.
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("pax.tar.zst");
    zst_tar(&archive, |b| {
        let record = pax_record("size", "61440");
        for i in 0..21_000 {
            let mut x = header(tar::EntryType::XHeader, record.len() as u64);
            x.set_path("PaxHeader").unwrap();
            x.set_cksum();
            b.append(&x, record.as_slice()).unwrap();
            let mut h = header(tar::EntryType::Regular, 0);
            h.set_path(format!("f{i}")).unwrap();
            h.set_cksum();
            b.append(&h, std::io::repeat(0).take(61_440)).unwrap();
        }
    });
    let sandbox = tempfile::tempdir().unwrap();
    let c = cost(
        &["--root", archive.to_str().unwrap(), "--json"],
        sandbox.path(),
    );
    assert!(!c.ok);
    assert!(c.stderr.contains("exceed 1 GiB"), "{}", c.stderr);
    assert_eq!(
        entries_in(sandbox.path()),
        0,
        "refused before writing anything"
    );
    eprintln!("pax size: peak {} KiB in {:?}", c.peak_kib, c.elapsed);
}

#[test]
fn a_deep_tree_is_refused_before_any_directory_is_made() {
    // The shape: 20 paths of 30,000 levels, then a clashing symlink.
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("deep.tar.zst");
    let deep = "a/".repeat(30_000);
    zst_tar(&archive, |b| {
        for i in 0..20 {
            let mut h = header(tar::EntryType::Regular, 1);
            b.append_data(&mut h, format!("{deep}{i}"), &b"x"[..])
                .unwrap();
        }
        let mut h = header(tar::EntryType::Symlink, 0);
        b.append_link(&mut h, "a", "/").unwrap();
    });
    let sandbox = tempfile::tempdir().unwrap();
    let c = cost(
        &["--root", archive.to_str().unwrap(), "--json"],
        sandbox.path(),
    );
    assert!(!c.ok);
    assert!(c.stderr.contains("longer than 4096 bytes"), "{}", c.stderr);
    assert_eq!(entries_in(sandbox.path()), 0, "no directory left in TMPDIR");
    assert!(c.elapsed < Duration::from_secs(10), "took {:?}", c.elapsed);
}

/// A small real recording at `dir/name`.
fn recording(dir: &Path, name: &str) -> std::path::PathBuf {
    let ledger = dir.join(name);
    run_ok(&mut record_job(
        Some(&fixture("seed-2622")),
        "10ms",
        &ledger,
        &["sleep", "0.05"],
    ));
    ledger
}

#[test]
fn reading_a_recording_never_writes_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recordings");
    std::fs::create_dir(&dir).unwrap();
    let ledger = recording(&dir, "run.ledger");
    // A -wal and a -shm that are hard links to files outside the directory.
    let mut canaries = Vec::new();
    for suffix in ["-wal", "-shm"] {
        let canary = tmp.path().join(format!("canary{suffix}"));
        std::fs::write(&canary, b"do not touch").unwrap();
        std::fs::hard_link(&canary, dir.join(format!("run.ledger{suffix}"))).unwrap();
        let before = std::fs::metadata(&canary).unwrap().modified().unwrap();
        canaries.push((canary, before));
    }
    let sandbox = tempfile::tempdir().unwrap();
    let c = cost(
        &["show", ledger.to_str().unwrap(), "--json"],
        sandbox.path(),
    );
    assert!(c.ok, "{}", c.stderr);
    assert!(c.stderr.contains("not closed cleanly"), "{}", c.stderr);
    assert_eq!(entries_in(sandbox.path()), 0, "the private copy is removed");
    for (canary, before) in canaries {
        assert_eq!(std::fs::read(&canary).unwrap(), b"do not touch");
        assert_eq!(
            std::fs::metadata(&canary).unwrap().modified().unwrap(),
            before
        );
    }
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["run.ledger", "run.ledger-shm", "run.ledger-wal"],
        "no journal"
    );
}

/// Runs `sql` on the recording (as its author could).
fn craft(ledger: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(ledger).unwrap();
    conn.execute_batch(sql).unwrap();
}

#[test]
fn a_generated_comm_is_refused_before_it_is_computed() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = recording(tmp.path(), "gen.ledger");
    craft(
        &ledger,
        "ALTER TABLE processes RENAME TO p_old;
         CREATE TABLE processes(pid INTEGER PRIMARY KEY, cmdline TEXT NOT NULL, rank INTEGER,
           local_rank INTEGER, env TEXT NOT NULL, first_sample INTEGER NOT NULL,
           last_sample INTEGER NOT NULL, labels TEXT NOT NULL DEFAULT '{}',
           comm TEXT GENERATED ALWAYS AS (printf('%.*c', 200000000, 'x')) VIRTUAL);
         INSERT INTO processes(pid, cmdline, rank, local_rank, env, first_sample, last_sample, labels)
           SELECT pid, cmdline, rank, local_rank, env, first_sample, last_sample, labels FROM p_old;
         INSERT INTO processes(pid, cmdline, env, first_sample, last_sample)
           WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 30)
           SELECT 100000 + i, '', '{}', 1, 1 FROM c;
         DROP TABLE p_old;",
    );
    let c = cost(&["show", ledger.to_str().unwrap(), "--json"], tmp.path());
    assert!(!c.ok);
    assert!(
        c.stderr.contains("processes.comm is generated"),
        "{}",
        c.stderr
    );
    assert!(c.peak_kib < 100 << 10, "peak RSS {} KiB", c.peak_kib);
    assert!(c.elapsed < Duration::from_secs(10), "took {:?}", c.elapsed);
}

#[test]
fn views_and_triggers_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, sql) in [
        ("view", "CREATE VIEW v AS SELECT * FROM meta;"),
        (
            "trigger",
            "CREATE TRIGGER t AFTER INSERT ON meta BEGIN DELETE FROM meta; END;",
        ),
    ] {
        let ledger = recording(tmp.path(), &format!("{name}.ledger"));
        craft(&ledger, sql);
        let out = run(&["show", ledger.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains(&format!("holds {name}")), "{err}");
    }
}

/// Adds `n` series rows for processes that were never recorded, each with one point.
fn add_series(ledger: &Path, n: u64, same_process: bool) {
    let pid = if same_process {
        "4242424"
    } else {
        "1000000 + i"
    };
    craft(
        ledger,
        &format!(
            "INSERT INTO series(id, pid, device, region, class)
               WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n})
               SELECT 1000000 + i, {pid}, 'card0', 'r' || i, 'device' FROM c;
             INSERT INTO points(series, sample, total, resident, shared)
               SELECT id, (SELECT MIN(id) FROM samples), 4096, 4096, 0 FROM series WHERE id > 1000000;"
        ),
    );
}

#[test]
fn a_hundred_thousand_series_read_in_bounded_memory_and_time() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = recording(tmp.path(), "series.ledger");
    add_series(&ledger, 100_000, false);
    let c = cost(&["show", ledger.to_str().unwrap(), "--json"], tmp.path());
    assert!(c.ok, "{}", c.stderr);
    eprintln!("100k series: peak {} KiB in {:?}", c.peak_kib, c.elapsed);
    assert!(c.peak_kib < 400 << 10, "peak RSS {} KiB", c.peak_kib);
    assert!(c.elapsed < Duration::from_secs(120), "took {:?}", c.elapsed);
}

#[test]
fn too_many_series_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let wide = recording(tmp.path(), "wide.ledger");
    add_series(&wide, 300, true);
    let out = run(&["show", wide.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("300 series for one process"), "{err}");
    let many = recording(tmp.path(), "many.ledger");
    add_series(&many, 200_001, false);
    let out = run(&["show", many.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rows in series"), "{err}");
}

#[test]
fn a_wal_that_is_a_fifo_or_a_link_to_dev_zero_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = recording(tmp.path(), "odd.ledger");
    let wal = tmp.path().join("odd.ledger-wal");
    for make in ["fifo", "link"] {
        let _ = std::fs::remove_file(&wal);
        match make {
            "fifo" => assert!(std::process::Command::new("mkfifo")
                .arg(&wal)
                .status()
                .unwrap()
                .success()),
            _ => std::os::unix::fs::symlink("/dev/zero", &wal).unwrap(),
        }
        let sandbox = tempfile::tempdir().unwrap();
        let c = cost(
            &["show", ledger.to_str().unwrap(), "--json"],
            sandbox.path(),
        );
        assert!(c.ok, "{make}: {}", c.stderr);
        assert!(c.stderr.contains("not closed cleanly"), "{}", c.stderr);
        assert!(
            c.elapsed < Duration::from_secs(30),
            "{make}: {:?}",
            c.elapsed
        );
        assert!(
            c.peak_kib < 100 << 10,
            "{make}: peak RSS {} KiB",
            c.peak_kib
        );
        assert_eq!(entries_in(sandbox.path()), 0);
    }
}
