//! A DRM client held by several processes is credited to the one that uses it: a launcher
//! (torchrun) that keeps rank 0's fd open must not take rank 0's bytes, move rank 0's home to the
//! peer card and so hide rank 0's `peer_mirror` finding (issue 34).

use crate::common;
use common::*;
use std::os::unix::fs::symlink;
use std::path::Path;

/// A simulated 2-rank job whose launcher (pid 4000, no rank variable) also holds rank 0's fd
/// to card 0, as an inherited or passed fd would leave it.
fn launcher_holds_rank0(tree: &Path) {
    let t = tree.to_str().unwrap();
    stdout_of(&["simulate", "ddp-peer-mirror", "--out", t], 0);
    let launcher = tree.join("proc/4000");
    assert!(!read(&launcher.join("environ")).contains("RANK="));
    std::fs::create_dir_all(launcher.join("fdinfo")).unwrap();
    symlink("/dev/dri/renderD128", launcher.join("fd/10")).unwrap();
    std::fs::copy(tree.join("proc/4001/fdinfo/10"), launcher.join("fdinfo/10")).unwrap();
}

#[test]
fn a_launcher_holding_rank_0s_fd_takes_neither_its_bytes_nor_its_finding() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    launcher_holds_rank0(&tree);
    let t = tree.to_str().unwrap();
    let doc = json_of(&["--root", t, "--json"], 0);
    let procs = doc["processes"].as_array().unwrap();
    let row = |pid: u64| procs.iter().find(|p| p["pid"] == pid).unwrap();
    assert_eq!(row(4001)["home_device"], "0000:03:00.0", "{:#}", row(4001));
    let mirrors = findings_of(&doc, "peer_mirror");
    let pids: Vec<u64> = mirrors.iter().filter_map(|f| f["pid"].as_u64()).collect();
    assert!(pids.contains(&4001) && pids.contains(&4002), "{mirrors:#?}");
    // The launcher's row says what it holds and where it is counted.
    let text = stdout_of(&["--root", t], 0);
    assert!(
        text.contains("pid 4000 (torchrun) also holds client")
            && text.contains("of pid 4001: counted there"),
        "{text}"
    );
}
