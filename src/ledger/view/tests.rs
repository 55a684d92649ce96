use super::*;
use crate::findings::{analyze, Kind, Severity, Thresholds};
use crate::root::Root;
use crate::sampler::{Sampler, SamplerOptions, Scope};
use std::path::Path;

fn ledger(name: &str) -> Ledger {
    let root = Root::open(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap();
    let snap = Sampler::new(root, Scope::All, SamplerOptions::default())
        .sample()
        .unwrap();
    Ledger::from_snapshot(snap)
}

fn devices(given: &[&str]) -> Vec<String> {
    given.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_device_is_a_slot_a_minor_or_an_index() {
    let l = ledger("seed-2622");
    for given in [
        "0000:04:00.0",
        "04:00.0",
        "card1",
        "renderD129",
        "1",
        "RENDERD129",
    ] {
        let f = Filter::resolve(&l, &[], &devices(&[given])).unwrap();
        assert!(f.shows_device("0000:04:00.0"), "{given}");
        assert!(!f.shows_device("0000:03:00.0"), "{given}");
    }
    for bad in ["2", "card7", "0000:05:00.0", ""] {
        let err = Filter::resolve(&l, &[], &devices(&[bad])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("0=0000:03:00.0 (card0 renderD128)"), "{text}");
    }
}

#[test]
fn a_pid_without_gpu_memory_is_an_error() {
    let l = ledger("seed-2622");
    assert!(Filter::resolve(&l, &[116401], &[]).is_ok());
    let err = Filter::resolve(&l, &[116401, 999_999], &[]).unwrap_err();
    assert!(matches!(err, FilterError::NoGpuProcess { pid: 999_999 }));
}

#[test]
fn device_filter_keeps_only_that_devices_rows() {
    let l = ledger("seed-2622");
    let f = Filter::resolve(&l, &[], &devices(&["card1"])).unwrap();
    let shown = f.ledger(l.clone());
    assert_eq!(shown.devices.len(), 1);
    assert_eq!(shown.processes.len(), 2, "both ranks hold memory on card1");
    for p in &shown.processes {
        assert!(p.usage.iter().all(|u| u.device == "0000:04:00.0"));
    }
    assert!(shown.clients.iter().all(|c| c.device == "0000:04:00.0"));
    assert_eq!(shown.host, l.host, "host totals stay machine-wide");
}

#[test]
fn pid_filter_keeps_that_process_and_the_host_wide_findings() {
    let l = ledger("seed-2622");
    let all = analyze(&l, &Thresholds::default());
    let f = Filter::resolve(&l, &[116400], &[]).unwrap();
    let shown = f.ledger(l.clone());
    assert_eq!(
        shown.processes.iter().map(|p| p.pid).collect::<Vec<_>>(),
        [116400]
    );
    let kept = f.findings(&all);
    let kinds: Vec<(Kind, Option<u32>)> = kept.iter().map(|x| (x.kind, x.pid)).collect();
    assert_eq!(
        kinds,
        [
            (Kind::PeerMirror, Some(116400)),
            (Kind::DriverHeldHost, None)
        ]
    );
}

#[test]
fn a_filter_never_changes_a_verdict() {
    // Rank 0's mirror is on card1. Shown through card1 alone, it is the same critical, pinned
    // finding as on the whole machine: it was computed with its home device in view.
    let l = ledger("seed-2622");
    let all = analyze(&l, &Thresholds::default());
    let f = Filter::resolve(&l, &[116400], &devices(&["card1"])).unwrap();
    let kept = f.findings(&all);
    let mirror = kept.iter().find(|x| x.kind == Kind::PeerMirror).unwrap();
    assert_eq!(mirror.severity, Severity::Critical);
    assert!(all.contains(mirror));
    // Analysing the filtered ledger instead would lose it: its home VRAM is filtered out.
    let naive = analyze(&f.ledger(l.clone()), &Thresholds::default());
    assert!(!naive.iter().any(|x| x.kind == Kind::PeerMirror));
}

#[test]
fn sort_keys_order_processes() {
    let mut l = ledger("seed-2622");
    SortKey::Pid.sort(&mut l.processes);
    assert_eq!(l.processes[0].pid, 116400);
    SortKey::Host.sort(&mut l.processes);
    let host = |p: &ProcessRow| {
        p.usage
            .iter()
            .filter(|u| u.class == MemClass::Host)
            .filter_map(|u| u.resident)
            .sum::<u64>()
    };
    assert!(host(&l.processes[0]) >= host(&l.processes[1]));
    assert_eq!(
        l.processes[0].pid, 116401,
        "rank 1 holds 9.2 GiB host-class, rank 0 9.1 GiB"
    );
}
