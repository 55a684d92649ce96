//! `capture` writes a tree or archive that `--root` reads back to the same ledger; hostile trees
//! cannot make gpuledger read outside them.

use crate::common;
use common::*;
use serde_json::Value;

/// Captures fixture `name` into an archive under `dir`, checks that `--root` on the archive gives
/// the same snapshot, and returns capture's stderr.
fn round_trip(name: &str, dir: &std::path::Path) -> String {
    let archive = dir.join(format!("{name}.tar.zst"));
    let src = fixture(name);
    let out = run(&[
        "--root",
        src.to_str().unwrap(),
        "capture",
        "-o",
        archive.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name}: {err}");
    let original = json_of(&["--root", src.to_str().unwrap(), "--json"], 0);
    let back = json_of(&["--root", archive.to_str().unwrap(), "--json"], 0);
    assert_eq!(normalised(original), normalised(back), "{name}");
    err
}

fn normalised(mut doc: Value) -> Value {
    doc["time"] = Value::Null;
    doc["root"] = Value::Null;
    // Only GPU processes are captured, so the scan counts differ by design.
    doc["scan"] = Value::Null;
    doc
}

#[test]
fn capture_archive_round_trips_a_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let err = round_trip("seed-2622", tmp.path());
    assert!(
        err.contains("2 GPU processes, 4 DRM fds, 2 devices"),
        "{err}"
    );
    let src = fixture("seed-2622");
    let tree = tmp.path().join("tree");
    assert!(run(&[
        "--root",
        src.to_str().unwrap(),
        "capture",
        "-o",
        tree.to_str().unwrap()
    ])
    .status
    .success());
    let environ = std::fs::read(tree.join("proc/116400/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        environ.contains("RANK=0") && !environ.contains("HF_TOKEN") && !environ.contains("HOME=")
    );
    let fdinfo = std::fs::read_to_string(tree.join("proc/116400/fdinfo/4")).unwrap();
    assert_eq!(
        fdinfo,
        std::fs::read_to_string(src.join("proc/116400/fdinfo/4")).unwrap(),
        "verbatim"
    );
}

#[test]
fn capture_keeps_cgroups_kfd_device_totals_and_nvml() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["k8s-slurm-dmem", "rocm-kfd", "nvidia"] {
        round_trip(name, tmp.path());
    }
}

#[test]
fn capture_of_live_machine_is_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("live.tar.zst");
    stdout_of(&["capture", "-o", archive.to_str().unwrap()], 0);
    let doc = json_of(&["--root", archive.to_str().unwrap(), "--json"], 0);
    assert!(doc["host"]["mem_total"].as_u64().unwrap() > 0);
}

#[test]
fn hostile_tree_symlinks_stay_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("proc/10/fd")).unwrap();
    std::fs::create_dir_all(root.join("proc/10/fdinfo")).unwrap();
    std::os::unix::fs::symlink("/proc/meminfo", root.join("proc/meminfo")).unwrap();
    std::fs::write(root.join("proc/10/comm"), "evil\n").unwrap();
    std::os::unix::fs::symlink("/dev/dri/renderD128", root.join("proc/10/fd/3")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../../../../../etc/passwd",
        root.join("proc/10/fdinfo/3"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/proc/self/fd", root.join("proc/10/fd/4")).unwrap();
    let doc = json_of(&["--root", root.to_str().unwrap(), "--json"], 0);
    assert_eq!(
        doc["host"]["mem_total"],
        Value::Null,
        "the live /proc/meminfo must not be read"
    );
    assert!(doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["usage"].as_array().unwrap().is_empty()));
}

#[test]
fn root_that_is_no_capture_is_a_clear_error() {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), b"not an archive at all").unwrap();
    let out = run(&["--root", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("capture archive") && err.contains(tmp.path().to_str().unwrap()),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    let out = run(&["--root", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/proc"),
        "names the missing proc/"
    );
}
