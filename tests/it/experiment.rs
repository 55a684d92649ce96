//! `experiment` on simulated runs whose behaviour depends on the controls' variables, and
//! `project` against hand-computed numbers.

use crate::common;
use common::*;

#[test]
fn experiment_names_the_controls_that_remove_the_effect() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let out_dir = tmp.path().join("runs");
    let out = stdout_of(
        &[
            "--root",
            tree.to_str().unwrap(),
            "experiment",
            "--controls",
            "no-defer-backing,nccl-no-p2p,mask:ZE_AFFINITY_MASK=1",
            "--interval",
            "100ms",
            "-o",
            out_dir.to_str().unwrap(),
            "--",
            env!("CARGO_BIN_EXE_gpuledger"),
            "simulate",
            "ddp-peer-mirror",
            "--live",
            "2s",
            "--force",
            "--out",
            tree.to_str().unwrap(),
        ],
        0,
    );
    let pinned: Vec<&str> = out
        .lines()
        .find(|l| l.trim_start().starts_with("pinned peer mirror"))
        .unwrap()
        .split_whitespace()
        .skip(3)
        .collect();
    assert_eq!(
        pinned,
        ["yes", "no", "yes", "no"],
        "as given, no-defer-backing, nccl-no-p2p, mask:\n{out}"
    );
    assert!(
        out.contains(
            "Removes the effect: no-defer-backing (driver-held 37.0 GiB → 686.1 MiB); mask ("
        ),
        "{out}"
    );
    assert!(!out.contains("nccl-no-p2p (driver-held"), "{out}");
    assert!(out.contains("Debug keys are for diagnosis only"));
    assert!(out_dir.join("no-defer-backing-0.ledger").exists());
    let list = stdout_of(&["experiment", "--list-controls"], 0);
    for name in [
        "single-device",
        "no-defer-backing",
        "no-peer-access",
        "no-usm-pools",
        "nccl-no-p2p",
        "usm-resident",
    ] {
        assert!(list.contains(name), "{list}");
    }
    assert!(list.contains("ForceZeDeviceCanAccessPerReturnValue=0"));
    assert!(list.contains("SYCL_UR_USE_LEVEL_ZERO_V2=0 UR_L0_USM_RESIDENT=0x1"));
    let opt_in = list
        .lines()
        .find(|l| l.starts_with("skip-peer-residency"))
        .unwrap_or_else(|| panic!("skip-peer-residency not listed:\n{list}"));
    assert!(
        opt_in.contains("opt-in, runs only when named: "),
        "{opt_in}"
    );
    assert!(
        opt_in.contains("GPULEDGER_ZE_SKIP_PEER_RESIDENCY=1"),
        "{opt_in}"
    );
    let bad = run(&["experiment", "--controls", "bogus", "--", "true"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown control \"bogus\""));
}

#[test]
fn project_matches_hand_computed_cases() {
    let out = stdout_of(
        &[
            "project",
            "--ranks",
            "4",
            "--vram-per-rank",
            "11.4GiB",
            "--host-mem",
            "60GiB",
        ],
        0,
    );
    assert!(
        out.contains("      4           3        136.8 GiB  does not fit"),
        "{out}"
    );
    assert!(
        out.contains("The job stops fitting at 3 ranks: 3 × 2 × 11.4 GiB = 68.4 GiB"),
        "{out}"
    );
    let ring = stdout_of(
        &[
            "project",
            "--ranks",
            "8",
            "--vram-per-rank",
            "10GiB",
            "--peers",
            "ring",
            "--host-mem",
            "512GiB",
        ],
        0,
    );
    assert!(
        ring.contains("      8           2        160.0 GiB  fits"),
        "{ring}"
    );
    assert!(
        ring.contains("Up to 8 ranks fit; the job would stop fitting at 26 ranks."),
        "{ring}"
    );
    let tmp = tempfile::tempdir().unwrap();
    assert!(run(&["demo", "--keep", tmp.path().to_str().unwrap()])
        .status
        .success());
    let from = stdout_of(
        &[
            "project",
            "--ranks",
            "2",
            "--from",
            tmp.path().join("A-pinned.ledger").to_str().unwrap(),
            "--host-mem",
            "64GiB",
        ],
        0,
    );
    assert!(from.contains("Per-peer mirror 18.2 GiB"), "{from}");
    assert!(
        from.contains("      2           1         36.3 GiB  fits"),
        "{from}"
    );
    let none = run(&["project", "--ranks", "2"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("--from <RECORDING>|--vram-per-rank"));
}
