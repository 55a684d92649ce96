//! The snapshot's cost grows linearly with its GPU clients, and repeated sampling costs a small
//! share of the first scan: regression bounds that hold on any machine because they compare two
//! sizes in one run, or count the work (fd links read), instead of timing against a constant (the
//! figures themselves are `cargo bench --bench pipeline -- snapshot_per_client` and
//! `bench/scan.sh`).

use crate::common::*;
use gpuledger::clock::ManualClock;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
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

/// The GPU clients a simulated tree of `ranks` ranks gives, and the fd links the sampler read
/// for them, in one library sample.
fn clients_and_links(root: &str) -> (usize, u64) {
    let root = gpuledger::root::Root::open(Path::new(root)).unwrap();
    let mut s = Sampler::new(root, Scope::All, SamplerOptions::default());
    let snap = s.sample().unwrap();
    let clients = snap.processes.iter().map(|p| p.drm.len()).sum();
    (clients, s.links_read())
}

#[test]
fn the_work_and_the_output_per_client_stay_flat_from_64_to_4096_clients() {
    let tmp = tempfile::tempdir().unwrap();
    let (small, large) = (tree(tmp.path(), 8), tree(tmp.path(), 64));
    let ((cs, ls), (cl, ll)) = (clients_and_links(&small), clients_and_links(&large));
    assert_eq!((cs, cl), (64, 4096));
    let per = |links: u64, clients: usize| links as f64 / clients as f64;
    assert!(
        per(ll, cl) <= per(ls, cs) * 1.1,
        "links per client: {ls} for {cs} clients, {ll} for {cl}"
    );
    // Every number the snapshot reports is rendered once per client or per pair of ranks
    // holding a peer's mirror: both grow as the clients do, never faster.
    let bytes = |root: &str| stdout_of(&["--root", root, "--json"], 0).len() as f64;
    let (bs, bl) = (bytes(&small), bytes(&large));
    assert!(
        bl / cl as f64 <= bs / cs as f64 * 1.25,
        "JSON bytes per client: {bs} for {cs} clients, {bl} for {cl}"
    );
}

/// A shell holding `n` more fds on /dev/null, which opens one more for each line it reads.
fn fd_holder(n: u32) -> std::process::Child {
    let script = format!(
        "for i in $(seq 10 {}); do eval \"exec $i</dev/null\"; done; echo ready; \
         while read -r x; do eval \"exec {}</dev/null\"; echo opened; done",
        9 + n,
        10 + n
    );
    let mut child = Command::new("bash")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bash");
    expect_line(&mut child, "ready");
    child
}

fn expect_line(child: &mut std::process::Child, want: &str) {
    let mut line = [0u8; 16];
    let n = child.stdout.as_mut().unwrap().read(&mut line).unwrap();
    assert_eq!(String::from_utf8_lossy(&line[..n]).trim(), want);
}

/// A live sampler of `pid` alone, on a clock the test moves.
fn live_sampler(pid: u32, opts: SamplerOptions) -> (Sampler, Arc<ManualClock>) {
    let clock = ManualClock::new();
    let scope = Scope::Pids([pid].into_iter().collect());
    let s = Sampler::new(gpuledger::root::Root::live(), scope, opts).with_clock(clock.clone());
    (s, clock)
}

/// Links read by `samples` samples `step` apart.
fn links_over(s: &mut Sampler, clock: &ManualClock, samples: u32, step: Duration) -> u64 {
    let before = s.links_read();
    for _ in 0..samples {
        clock.advance(step);
        s.sample().unwrap();
    }
    s.links_read() - before
}

#[test]
fn steady_sampling_reads_only_new_fd_links_and_a_tenth_of_the_full_walk_per_rotation() {
    let mut child = fd_holder(300);
    let (mut s, clock) = live_sampler(child.id(), SamplerOptions::default());
    s.sample().unwrap();
    let first = s.links_read();
    assert!(first >= 300, "the first sample reads every link: {first}");
    // 10 Hz for 5 s: five fd-count checks, nothing changed.
    let steady = links_over(&mut s, &clock, 50, Duration::from_millis(100));
    assert_eq!(steady, 0, "an unchanged table costs no readlink");
    // One fd more: the next check reads its link alone.
    child.stdin.as_mut().unwrap().write_all(b"open\n").unwrap();
    expect_line(&mut child, "opened");
    let one = links_over(&mut s, &clock, 10, Duration::from_millis(100));
    assert!((1..=2).contains(&one), "one new fd, {one} links read");
    // Ten rotations: one of them reads every link, the others only new numbers.
    let rotations = links_over(&mut s, &clock, 10, Duration::from_secs(30));
    assert!(
        (first..first * 2).contains(&rotations),
        "ten rotations read {rotations} links; the full walk is {first}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn fresh_sampling_reads_every_link_at_every_sample() {
    let mut child = fd_holder(50);
    let (mut s, clock) = live_sampler(child.id(), SamplerOptions::fresh());
    s.sample().unwrap();
    let first = s.links_read();
    let five = links_over(&mut s, &clock, 5, Duration::from_millis(100));
    assert_eq!(five, 5 * first, "guard's sampler trusts no remembered link");
    child.kill().unwrap();
    child.wait().unwrap();
}
