//! Round trips through a real file: driver-held as the ledger defines it, and each finding's
//! severity taken at its peak.

use super::{open, Recorder, RecordingMeta};
use crate::findings::{Backing, Finding, Kind, Severity};
use crate::ledger::{HeldCounter, HostTotals, Ledger};

fn ledger(t: u64, unaccounted: u64, pinned_shmem: u64) -> Ledger {
    Ledger {
        time_ms: t,
        host: HostTotals {
            mem_total: Some(64 << 30),
            mem_available: Some(32 << 30),
            unaccounted: Some(unaccounted),
            pinned_shmem: Some(pinned_shmem),
            ..HostTotals::default()
        },
        ..Ledger::default()
    }
}

fn mirror(bytes: u64, backing: Backing, severity: Severity) -> Finding {
    Finding {
        pid: Some(7),
        rank: Some(0),
        device: Some("0000:03:00.0".into()),
        peer: Some("0000:04:00.0".into()),
        bytes,
        backing: Some(backing),
        ..Finding::new(Kind::PeerMirror, severity, format!("{bytes} {backing:?}"))
    }
}

#[test]
fn driver_held_and_severity_come_back_as_the_ledger_said_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ledger");
    let mut rec = Recorder::create(&path, &RecordingMeta::default()).unwrap();
    // Early on the backing is not known yet (warning); at the peak it is not pinned (info).
    rec.add(
        &ledger(1_000, 1 << 30, 0),
        &[mirror(4 << 30, Backing::Unknown, Severity::Warning)],
    )
    .unwrap();
    rec.add(
        &ledger(2_000, 1 << 30, 25 << 30),
        &[mirror(18 << 30, Backing::NotPinned, Severity::Info)],
    )
    .unwrap();
    rec.add(
        &ledger(3_000, 2 << 30, 0),
        &[mirror(17 << 30, Backing::Unknown, Severity::Warning)],
    )
    .unwrap();
    rec.finish(3_000, Some(0), None).unwrap();
    drop(rec);
    let r = open(&path).unwrap();
    let held = r.host.driver_held_peak.unwrap();
    assert_eq!(
        (
            held.bytes,
            held.counter,
            held.counter_bytes,
            held.pinned_shmem
        ),
        (26 << 30, HeldCounter::Unaccounted, 1 << 30, 25 << 30),
        "the peak sample, pinned shmem included"
    );
    let f = &r.findings[0];
    assert_eq!(
        (
            f.peak.kind,
            f.peak.severity,
            f.worst_severity,
            f.peak.backing,
            f.peak.bytes
        ),
        (
            Kind::PeerMirror,
            Severity::Info,
            Severity::Warning,
            Some(Backing::NotPinned),
            18 << 30
        )
    );
    assert_eq!(f.peak.message, format!("{} NotPinned", 18u64 << 30));
}

#[test]
fn job_evidence_round_trips_and_a_stuffed_file_reads_bounded() {
    use crate::job_output::{Collector, ErrorKind, RateSpec, Stream, TAIL_LINES};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ev.ledger");
    let mut r = Recorder::create(&path, &RecordingMeta::default()).unwrap();
    let rates = vec![RateSpec::parse("wave=wave ([0-9.]+):s/wave").unwrap()];
    r.start_output(&rates).unwrap();
    let mut c = Collector::new(rates);
    c.line(Stream::Stdout, 10, b"wave 3.5");
    c.line(Stream::Stderr, 20, b"hipErrorOutOfMemory");
    c.marker(15, b"epoch 1");
    r.add_output(&c.take()).unwrap();
    r.finish_output(&c.tail(), c.counts()).unwrap();
    r.add(&ledger(5, 0, 0), &[]).unwrap();
    r.finish(30, Some(0), None).unwrap();
    drop(r);
    let e = open(&path).unwrap().evidence;
    assert!(e.captured);
    assert_eq!(e.lines, 2);
    assert_eq!(e.errors.len(), 1);
    assert_eq!(
        (
            e.errors[0].kind,
            e.errors[0].line.stream,
            e.errors[0].line.t_ms
        ),
        (ErrorKind::Hip, Stream::Stderr, 20)
    );
    assert_eq!(e.rates[0].points, [(10, 3.5)]);
    assert_eq!(e.rates[0].unit.as_deref(), Some("s/wave"));
    assert_eq!(e.markers[0].text, "epoch 1");
    assert_eq!(e.tail.len(), 2);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
         INSERT INTO output_tail(seq, t_ms, stream, text) SELECT i, i, 'stdout', 'x' FROM n;",
    )
    .unwrap();
    drop(conn);
    let tail = open(&path).unwrap().evidence.tail;
    assert_eq!(tail.len(), TAIL_LINES);
    assert_eq!(
        tail.last().map(|l| l.t_ms),
        Some(5000),
        "the last lines, in order"
    );
}

#[test]
fn a_finding_kind_from_a_newer_build_reads_as_unknown_with_its_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ledger");
    let mut rec = Recorder::create(&path, &RecordingMeta::default()).unwrap();
    rec.add(
        &ledger(1_000, 1 << 30, 0),
        &[mirror(4 << 30, Backing::NotPinned, Severity::Info)],
    )
    .unwrap();
    rec.finish(1_000, Some(0), None).unwrap();
    drop(rec);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE findings SET kind = 'peer_mirror_v9'", [])
        .unwrap();
    drop(conn);
    let r = open(&path).unwrap();
    let f = &r.findings[0].peak;
    assert_eq!(
        (f.kind, f.severity, f.bytes, f.pid),
        (Kind::Unknown, Severity::Info, 4 << 30, Some(7))
    );
    assert_eq!(f.kind.as_str(), "unknown");
}
