//! Level Zero tracing against the real loader (Debian's `libze1`/`libze-dev`, installed by
//! `.ci/run`): the test builds the tracer library, a two-device test driver the loader loads
//! through `ZE_ENABLE_ALT_DRIVERS`, and a two-rank job reproducing compute-runtime#953 (each rank
//! makes its device allocation resident on its peer), all from `tests/ze/`. Under
//! `gpuledger record` the peer residency calls appear by call with their devices and bytes; with
//! `GPULEDGER_ZE_SKIP_PEER_RESIDENCY=1` they are answered without reaching the driver (the driver
//! counts what reaches it), also as `experiment --controls skip-peer-residency`; a job preloading
//! its own Level Zero shim is not traced twice.
//! Skips, saying so, where the loader or its headers are not installed.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const GIB: u64 = 1 << 30;
const HEADER: &str = "/usr/include/level_zero/ze_ddi.h";

/// What the test builds once.
struct Built {
    tracer: PathBuf,
    driver: PathBuf,
    ranks: PathBuf,
    shim: PathBuf,
}

fn cc(args: &[&str], out: &Path) {
    let st = Command::new("cc").args(args).arg("-o").arg(out).status();
    assert!(st.is_ok_and(|s| s.success()), "cc {args:?} failed");
}

fn build(dir: &Path) -> Built {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ze-tracer");
    let st = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args([
            "build",
            "--offline",
            "-q",
            "-p",
            "gpuledger-tracer",
            "--manifest-path",
        ])
        .arg(root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .unwrap();
    assert!(st.success(), "building the tracer library failed");
    let src = |f: &str| root.join("tests/ze").join(f).display().to_string();
    let b = Built {
        tracer: target.join("debug/libgpuledger_tracer.so"),
        driver: dir.join("libze_test_driver.so"),
        ranks: dir.join("ranks"),
        shim: dir.join("libshim.so"),
    };
    cc(
        &["-shared", "-fPIC", &src("driver.c"), &src("driver_stubs.c")],
        &b.driver,
    );
    cc(&[&src("ranks.c"), "-lze_loader"], &b.ranks);
    let shim = dir.join("shim.c");
    std::fs::write(&shim, "int zeContextMakeMemoryResident(void *c, void *d, void *p, unsigned long n) { return 0; }\n").unwrap();
    cc(&["-shared", "-fPIC", shim.to_str().unwrap()], &b.shim);
    b
}

/// Driver-side counts summed over the job's processes: (device allocations, local residency
/// calls, peer residency calls).
fn driver_counts(log: &Path) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().fold((0, 0, 0), |(a, l, p), line| {
        let f: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
        (a + f[1], l + f[4], p + f[5])
    })
}

/// Records the job; returns the recording's `show --json` calls, stderr and the driver counts.
fn record(
    b: &Built,
    dir: &Path,
    name: &str,
    env: &[(&str, &Path)],
) -> (Value, String, (u64, u64, u64)) {
    let ledger = dir.join(format!("{name}.ledger"));
    let log = dir.join(format!("{name}.log"));
    let mut cmd = bin();
    cmd.args(["record", "--interval", "50ms", "-o"])
        .arg(&ledger)
        .arg("--")
        .arg(&b.ranks)
        .env("GPULEDGER_TRACER", &b.tracer)
        .env("ZE_ENABLE_ALT_DRIVERS", &b.driver)
        .env("GPULEDGER_TEST_ZE_LOG", &log)
        .env_remove("CUDA_INJECTION64_PATH")
        .env_remove("LD_PRELOAD")
        .env_remove("ZE_ENABLE_TRACING_LAYER")
        .env_remove("GPULEDGER_ZE_SKIP_PEER_RESIDENCY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let json = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    let text = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    assert!(text.contains("By call"), "{text}");
    assert!(!stderr.contains("cannot be preloaded"), "{stderr}");
    (json["calls"].clone(), stderr + &text, driver_counts(&log))
}

/// The rows of one API kind: (device, calls, bytes live at peak).
fn rows(calls: &Value, api: &str) -> Vec<(u64, u64, u64)> {
    let mut v: Vec<_> = calls["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["api"] == api)
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (n("device"), n("calls"), n("peak_live"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn peer_residency_is_traced_through_the_real_loader_and_can_be_skipped() {
    if !Path::new(HEADER).is_file() {
        eprintln!("skipped: no Level Zero headers at {HEADER} (apt-get install libze1 libze-dev)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = build(tmp.path());

    let (calls, text, counts) = record(&b, tmp.path(), "traced", &[]);
    assert_eq!(calls["level_zero"], "on", "{text}");
    assert_eq!(counts, (2, 2, 2), "driver counts\n{text}");
    // Rank 0: 1 GiB on device 0 made resident on device 1; rank 1: 2 GiB on 1, resident on 0.
    assert_eq!(
        rows(&calls, "peer_residency"),
        [(0, 1, 2 * GIB), (1, 1, GIB)],
        "{text}"
    );
    assert_eq!(
        rows(&calls, "residency"),
        [(0, 1, GIB), (1, 1, 2 * GIB)],
        "{text}"
    );
    assert_eq!(
        rows(&calls, "device"),
        [(0, 1, GIB), (1, 1, 2 * GIB)],
        "{text}"
    );
    // record's own summary on stderr repeats the table; count show's.
    let show = text.rsplit("By call").next().unwrap();
    let peer_lines = show
        .lines()
        .filter(|l| l.contains("peer_residency"))
        .count();
    assert_eq!(peer_lines, 2, "{text}");
    assert_eq!(calls["started"].as_array().unwrap().len(), 3, "{text}");
    assert_eq!(calls["dropped"], 0);

    let skip = [("GPULEDGER_ZE_SKIP_PEER_RESIDENCY", Path::new("1"))];
    let (calls, text, counts) = record(&b, tmp.path(), "skipped", &skip);
    assert_eq!(counts, (2, 2, 0), "peer calls reached the driver\n{text}");
    assert_eq!(calls["skipped_peer_residency"], 2, "{text}");
    assert_eq!(
        rows(&calls, "peer_residency"),
        [(0, 1, 0), (1, 1, 0)],
        "{text}"
    );
    assert!(
        text.contains("2 peer residency calls answered by gpuledger's interposer"),
        "{text}"
    );

    let shim = [("LD_PRELOAD", b.shim.as_path())];
    let (calls, text, counts) = record(&b, tmp.path(), "shimmed", &shim);
    assert!(
        calls["level_zero"]
            .as_str()
            .unwrap()
            .starts_with("off: the job preloads"),
        "{text}"
    );
    assert!(
        text.contains("Level Zero tracing off: the job preloads"),
        "{text}"
    );
    assert_eq!(counts.2, 0, "the user's shim answers residency itself");
    assert!(rows(&calls, "peer_residency").is_empty(), "{text}");

    // The control through `experiment`: the run as given reaches the driver with both peer
    // calls, the skip-peer-residency run with none (the driver's counts add up over both).
    let log = tmp.path().join("experiment.log");
    let out = bin()
        .args(["experiment", "--controls", "skip-peer-residency", "-o"])
        .arg(tmp.path().join("experiment"))
        .arg("--")
        .arg(&b.ranks)
        .env("GPULEDGER_TRACER", &b.tracer)
        .env("ZE_ENABLE_ALT_DRIVERS", &b.driver)
        .env("GPULEDGER_TEST_ZE_LOG", &log)
        .env_remove("LD_PRELOAD")
        .env_remove("GPULEDGER_ZE_SKIP_PEER_RESIDENCY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(driver_counts(&log), (4, 4, 2), "{stderr}");
}
