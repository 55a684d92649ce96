//! The real binary against this machine's real /proc (no GPU needed).

use crate::common;
use common::*;

fn meminfo_kb(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{key}:")))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn live_snapshot_reads_real_proc() {
    let doc = json_of(&["--json"], 0);
    assert_eq!(doc["schema"], "gpuledger.snapshot/1");
    assert_eq!(doc["root"], "/");
    assert_eq!(
        doc["host"]["mem_total"].as_u64(),
        Some(meminfo_kb("MemTotal") * 1024)
    );
    let seen = doc["scan"]["processes"].as_u64().unwrap();
    let listed = std::fs::read_dir("/proc")
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_str()
                .unwrap()
                .parse::<u32>()
                .is_ok()
        })
        .count() as u64;
    assert!(
        seen > 0 && seen.abs_diff(listed) < 50,
        "scan saw {seen}, /proc lists {listed}"
    );
    assert!(doc["time"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn live_table_without_gpu_says_so_and_exits_0() {
    let out = stdout_of(&[], 0);
    // A one-line verdict, then the host.
    assert!(out.starts_with("OK: ") || out.contains(" finding"), "{out}");
    assert!(out.contains("\n\nHost memory\n"), "{out}");
    if !std::path::Path::new("/sys/class/drm").exists() {
        assert!(out.contains("none: no GPU found"), "{out}");
    }
}

#[test]
fn broken_pipe_is_success() {
    use std::process::Stdio;
    let mut child = bin().arg("--json").stdout(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    assert!(child.wait().unwrap().success());
}
