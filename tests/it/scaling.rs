//! The snapshot's cost grows linearly with its GPU clients: a regression bound that holds on any
//! machine because it compares two sizes in one run instead of timing against a constant (the
//! figures themselves are `cargo bench --bench pipeline -- snapshot_per_client`).

use crate::common::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// A simulated DDP job of `ranks` ranks with an fd on every card: ranks² GPU clients.
fn tree(dir: &Path, ranks: u32) -> String {
    let out = dir.join(format!("ranks-{ranks}"));
    let out = out.to_str().unwrap().to_string();
    let r = ranks.to_string();
    let args = ["simulate", "ddp-peer-mirror", "--ranks", &r, "--at", "20s"];
    stdout_of(
        &[&args[..], &["--backing", "registered-only", "-o", &out]].concat(),
        0,
    );
    out
}

/// The fastest of three whole snapshots (JSON, every finding) of `root`.
fn snapshot_time(root: &str) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            stdout_of(&["--root", root, "--json"], 0);
            start.elapsed()
        })
        .min()
        .unwrap()
}

#[test]
fn sixteen_times_the_clients_cost_at_most_forty_times_the_time() {
    let tmp = tempfile::tempdir().unwrap();
    let small = tree(tmp.path(), 16);
    let large = tree(tmp.path(), 64);
    let (s, l) = (snapshot_time(&small), snapshot_time(&large));
    let ratio = l.as_secs_f64() / s.as_secs_f64();
    // 256 → 4,096 clients: linear is at most 16 (less with fixed costs), quadratic 256.
    assert!(
        ratio < 40.0,
        "256 clients took {s:?}, 4,096 took {l:?}: {ratio:.1}× for 16× the clients"
    );
}
