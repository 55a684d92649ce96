//! The `record` invocations the tests repeat: a job recorded into a file, a tree recorded for a
//! while, a recorder left running.

use super::bin;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `gpuledger [--root ROOT] record --interval INTERVAL -o LEDGER -- JOB…`, not started yet.
pub fn record_job(root: Option<&Path>, interval: &str, ledger: &Path, job: &[&str]) -> Command {
    let mut cmd = bin();
    if let Some(root) = root {
        cmd.arg("--root").arg(root);
    }
    cmd.args(["record", "--interval", interval, "-o"])
        .arg(ledger)
        .arg("--")
        .args(job);
    cmd
}

/// `gpuledger --root TREE record --all --interval INTERVAL --duration DURATION -o LEDGER`, not
/// started yet (more flags may follow).
pub fn record_tree(tree: &Path, interval: &str, duration: &str, ledger: &Path) -> Command {
    let mut cmd = bin();
    cmd.arg("--root")
        .arg(tree)
        .args(["record", "--all", "--interval", interval])
        .args(["--duration", duration, "-o"])
        .arg(ledger);
    cmd
}

/// Starts `gpuledger record --all --interval 50ms -o LEDGER` in the background.
pub fn record_all(ledger: &Path) -> Child {
    bin()
        .args(["record", "--all", "--interval", "50ms", "-o"])
        .arg(ledger)
        .stderr(Stdio::null())
        .spawn()
        .expect("start record")
}
