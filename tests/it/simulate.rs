//! `simulate`: a job that runs host RAM out leaves the tree a dead job leaves on a real machine;
//! `--out` is never clobbered without `--force`; `capture` and `simulate` write one layout.

use crate::common;
use common::*;
use gpuledger::root::Root;
use gpuledger::sim::{read_job_end, JobOutcome};
use gpuledger::sources::kmsg::{kernel_evidence, parse_log, CapturedKmsg, KernelEvent};
use std::path::Path;

/// Pids with a directory under `proc/`.
fn pids(tree: &Path) -> Vec<String> {
    std::fs::read_dir(tree.join("proc"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

fn simulate(args: &[&str], out: &Path) -> std::process::Output {
    bin()
        .arg("simulate")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// `simulate --backing` takes the driver's words; the names earlier releases used stay
/// accepted, hidden, for the same behaviour (`eager` was pinned, `deferred` registered-only).
#[test]
fn backing_names_say_what_the_driver_does_and_the_old_names_still_work() {
    let tmp = tempfile::tempdir().unwrap();
    let truth = |backing: &str| {
        let tree = tmp.path().join(backing);
        let out = simulate(&["ddp-peer-mirror", "--backing", backing], &tree);
        assert!(out.status.success(), "{backing}: {out:?}");
        read(&tree.join("gpuledger-sim/truth.json"))
    };
    let (pinned, registered) = (truth("pinned"), truth("registered-only"));
    assert_ne!(pinned, registered);
    assert_eq!(truth("eager"), pinned);
    assert_eq!(truth("deferred"), registered);
    let mirrors = json_of(
        &[
            "--root",
            tmp.path().join("pinned").to_str().unwrap(),
            "--json",
        ],
        0,
    );
    let peer = findings_of(&mirrors, "peer_mirror");
    assert!(!peer.is_empty() && peer.iter().all(|f| f["backing"] == "pinned"));
    let help = stdout_of(&["simulate", "--help"], 0);
    assert!(
        help.contains("- pinned:") && help.contains("- registered-only:"),
        "{help}"
    );
    assert!(help.contains("EnableDeferBacking=0"), "{help}");
    assert!(
        !help.contains("eager") && !help.contains("deferred"),
        "{help}"
    );
}

#[test]
fn eight_pinned_ranks_leave_a_dead_job_with_its_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("eight");
    let out = simulate(
        &["ddp-peer-mirror", "--ranks", "8", "--backing", "pinned"],
        &tree,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("the job died at 6.0 s"), "{err}");
    assert_eq!(
        pids(&tree),
        Vec::<String>::new(),
        "ranks and torchrun are gone"
    );

    let root = Root::open(&tree).unwrap();
    let evidence = kernel_evidence(&root).unwrap();
    assert_eq!(evidence.len(), 8, "one failure per rank: {evidence:?}");
    for (kind, r) in &evidence {
        assert_eq!(*kind, KernelEvent::PageAllocationFailure);
        assert!(r
            .message
            .starts_with("python3: page allocation failure: order:0, mode:0x"));
    }
    let text = std::fs::read_to_string(tree.join("dev/kmsg")).unwrap();
    let records = parse_log(&text);
    assert_eq!(records.len(), text.lines().count(), "every line a record");
    assert!(records.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    assert!(records.iter().any(|r| r.message.contains("Comm: python3")));

    let end = read_job_end(&root).unwrap().expect("job end written");
    assert_eq!(end.outcome, JobOutcome::HostMemoryExhausted);
    assert_eq!((end.exit_code, end.signal), (Some(1), None));
    assert_eq!(end.end_s, 6.0);
    assert_eq!(end.boot_usec, evidence[0].1.usec, "same clock as the log");
    assert!(end
        .output_tail
        .iter()
        .any(|l| l.contains("UR_RESULT_ERROR_OUT_OF_RESOURCES")));

    let doc = json_of(&["--root", tree.to_str().unwrap(), "--json"], 0);
    assert!(doc["processes"].as_array().unwrap().is_empty());

    // The evidence travels in a capture archive too.
    let archive = tmp.path().join("eight.tar.zst");
    let t = tree.to_str().unwrap();
    stdout_of(
        &["--root", t, "capture", "-o", archive.to_str().unwrap()],
        0,
    );
    let packed = Root::open(&archive).unwrap();
    assert_eq!(kernel_evidence(&packed).unwrap().len(), 8);
    assert_eq!(read_job_end(&packed).unwrap(), Some(end));
}

#[test]
fn at_writes_the_job_before_it_dies() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("eight-early");
    let args = ["ddp-peer-mirror", "--ranks", "8", "--at", "3s"];
    let out = simulate(&args, &tree);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("3.0 s of 60 s, before the job dies at 6.0 s"),
        "{err}"
    );
    assert_eq!(pids(&tree).len(), 9, "torchrun and eight ranks");
    let root = Root::open(&tree).unwrap();
    assert_eq!(read_job_end(&root).unwrap(), None, "still running at 3 s");
    let doc = json_of(&["--root", tree.to_str().unwrap(), "--json"], 0);
    let kinds: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    // 3 s is before the first segment: contexts on every card are not a mirror (the truth).
    assert!(!kinds.contains(&"peer_mirror"), "{kinds:?}");

    let both = run(&[
        "simulate", "leak", "--at", "1s", "--live", "2s", "--out", "x",
    ]);
    assert_eq!(both.status.code(), Some(2), "--at and --live conflict");
}

#[test]
fn a_healthy_tree_has_no_kernel_evidence_and_no_job_end() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("two");
    assert!(simulate(&["ddp-peer-mirror"], &tree).status.success());
    let root = Root::open(&tree).unwrap();
    assert!(kernel_evidence(&root).unwrap().is_empty());
    assert_eq!(read_job_end(&root).unwrap(), None, "still running");
    assert_eq!(pids(&tree).len(), 3, "torchrun and two ranks");
}

#[test]
fn a_live_tree_shows_the_death_and_a_tail_reads_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("live");
    let _sim = live_sim(&tree, "3s", &["--ranks", "8"]);
    let root = Root::open(&tree).unwrap();
    let mut tail = CapturedKmsg::new();
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
    while read_job_end(&root).unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "the job never died");
        seen.extend(tail.read_new(&root).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    seen.extend(tail.read_new(&root).unwrap());
    let failures = seen
        .iter()
        .filter(|r| r.message.contains("page allocation failure"))
        .count();
    assert_eq!(failures, 8, "each record returned once");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(tail.read_new(&root).unwrap().is_empty(), "nothing new");
    assert_eq!(pids(&tree), Vec::<String>::new());
}

#[test]
fn a_non_empty_out_is_refused_and_force_replaces_only_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("used");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("sub/precious"), "keep").unwrap();
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("notes.txt"), "mine").unwrap();
    std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();

    let out = simulate(&["single-gpu"], &tree);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(tree.to_str().unwrap()) && err.contains("--force"),
        "{err}"
    );
    assert!(tree.join("notes.txt").exists(), "refused means untouched");

    let out = simulate(&["single-gpu", "--force"], &tree);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tree.join("notes.txt").exists() && !tree.join("link").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("sub/precious")).unwrap(),
        "keep",
        "a symlink's target is never cleared"
    );
    assert_eq!(pids(&tree).len(), 2, "the new tree");
}

/// Every file and link under `dir`, relative, with its bytes or link text.
fn listing(dir: &Path, rel: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir.join(rel)).unwrap() {
        let e = e.unwrap();
        let r = rel.join(e.file_name());
        let path = dir.join(&r);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let bytes = if meta.file_type().is_symlink() {
            std::fs::read_link(&path)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes()
        } else if meta.is_dir() {
            listing(dir, &r, out);
            continue;
        } else {
            std::fs::read(&path).unwrap()
        };
        out.push((r.to_string_lossy().into_owned(), bytes));
    }
}

fn sorted_entries(nul_joined: &[u8]) -> Vec<u8> {
    let mut entries: Vec<&[u8]> = nul_joined.split(|b| *b == 0).collect();
    entries.sort();
    entries.join(&0)
}

#[test]
fn capture_of_a_simulated_tree_writes_the_same_layout() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, args) in [
        ("plateau", &["ddp-peer-mirror"][..]),
        ("dead", &["ddp-peer-mirror", "--ranks", "8"][..]),
    ] {
        let sim = tmp.path().join(name);
        assert!(simulate(args, &sim).status.success());
        let cap = tmp.path().join(format!("{name}-capture"));
        stdout_of(
            &[
                "--root",
                sim.to_str().unwrap(),
                "capture",
                "-o",
                cap.to_str().unwrap(),
            ],
            0,
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        listing(&sim, Path::new(""), &mut a);
        listing(&cap, Path::new(""), &mut b);
        // What only one side writes: the simulator's `stat`, both manifests (each says who
        // wrote it), and torchrun, which holds no GPU fd and so is not captured.
        let shared = |l: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
            let mut l: Vec<_> = l
                .into_iter()
                .filter(|(p, _)| {
                    !p.ends_with("/stat")
                        && p != "gpuledger-capture.json"
                        && p != "gpuledger-sim/truth.json"
                        && !p.starts_with("proc/4000/")
                })
                .collect();
            l.sort();
            l
        };
        let (a, b) = (shared(a), shared(b));
        let names = |l: &[(String, Vec<u8>)]| l.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&a), names(&b), "{name}: same paths");
        for ((path, x), (_, y)) in a.iter().zip(&b) {
            // capture keeps the allow-listed environment sorted by name.
            let (x, y) = if path.ends_with("/environ") {
                (sorted_entries(x), sorted_entries(y))
            } else if path == "dev/kmsg" {
                // A capture keeps the log's evidence only: each failure with its task line and
                // stack, not the Mem-Info dump after it.
                let (all, kept) = (String::from_utf8_lossy(x), String::from_utf8_lossy(y));
                let evidence: String = all
                    .lines()
                    .filter(|l| kept.lines().any(|k| k == *l))
                    .map(|l| format!("{l}\n"))
                    .collect();
                assert!(!kept.contains("Mem-Info"), "{name}: {kept}");
                (evidence.into_bytes(), y.clone())
            } else {
                (x.clone(), y.clone())
            };
            assert!(
                x == y,
                "{name}: {path} differs:\n{}\n---\n{}",
                String::from_utf8_lossy(&x),
                String::from_utf8_lossy(&y)
            );
        }
        assert!(
            name != "dead" || b.iter().any(|(p, _)| p == "dev/kmsg"),
            "the evidence travels"
        );
    }
}

#[test]
fn a_simulated_recording_of_a_death_keeps_the_kernel_log_and_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = gpuledger::sim::SimParams::new(gpuledger::sim::Scenario::DdpPeerMirror);
    p.ranks = 8;
    let sim = gpuledger::sim::Simulation::new(p);
    let ledger = tmp.path().join("eight.ledger");
    let t = gpuledger::findings::Thresholds::default();
    gpuledger::sim::run::record(&sim, &tmp.path().join("tree"), &ledger, 30, &t).unwrap();
    let out = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    assert!(out.contains("exited with code 1"), "{out}");
    assert!(
        out.contains("Kernel log (8 page-allocation failures, 0 OOM kills, 0 driver lines)"),
        "only the failures' headlines are evidence, not their stacks:\n{out}"
    );
}

#[test]
fn recording_a_live_simulation_that_dies_says_when_and_how() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let _sim = live_sim(&tree, "3s", &["--ranks", "8", "--backing", "pinned"]);
    let ledger = tmp.path().join("died.ledger");
    let out = record_tree(&tree, "50ms", "20s", &ledger).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "exits as the job did: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    assert!(shown.contains("job end: exited with code 1"), "{shown}");
    assert!(shown.contains("page-allocation failures"), "{shown}");
    assert!(
        shown.contains("UR_RESULT_ERROR_OUT_OF_RESOURCES"),
        "{shown}"
    );
    assert!(!shown.contains("still running"), "{shown}");
}

#[test]
fn a_symlinked_out_is_refused_even_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let precious = tmp.path().join("precious");
    std::fs::create_dir_all(precious.join("sub")).unwrap();
    std::fs::write(precious.join("a.txt"), "keep").unwrap();
    std::fs::write(precious.join("sub/b.txt"), "keep").unwrap();
    let link = tmp.path().join("out");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let slashed = tmp.path().join("out/");
    for out in [&link, &slashed] {
        let run = simulate(&["single-gpu", "--force"], out);
        assert_eq!(run.status.code(), Some(1));
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains("symbolic link"), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(precious.join("a.txt")).unwrap(),
        "keep"
    );
    assert_eq!(
        std::fs::read_to_string(precious.join("sub/b.txt")).unwrap(),
        "keep"
    );
    assert_eq!(
        std::fs::read_dir(&precious).unwrap().count(),
        2,
        "nothing written"
    );
}

/// `--visible own`: each rank opens only its card and carries the mask a launcher would set;
/// nothing is mirrored. An NVIDIA job's tree carries NVML's answers, and its ranks read as
/// NVIDIA processes with their pinned host buffers.
#[test]
fn masks_and_nvidia_cards_read_back_as_the_model_wrote_them() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("own");
    let args = ["ddp-peer-mirror", "--ranks", "4", "--visible", "own"];
    assert!(simulate(&args, &tree).status.success());
    for r in 0..4u32 {
        let pid = 4001 + r;
        let fds = std::fs::read_dir(tree.join(format!("proc/{pid}/fd")))
            .unwrap()
            .count();
        assert_eq!(fds, 1, "rank {r} opens its own card only");
        let environ = std::fs::read(tree.join(format!("proc/{pid}/environ"))).unwrap();
        let mask = format!("ZE_AFFINITY_MASK={r}");
        assert!(environ.split(|b| *b == 0).any(|v| v == mask.as_bytes()));
    }
    let doc = json_of(&["--root", tree.to_str().unwrap(), "--json"], 0);
    assert!(doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["kind"] != "peer_mirror"));

    let nv = tmp.path().join("nv");
    assert!(simulate(&["nvidia-ddp", "--ranks", "2"], &nv)
        .status
        .success());
    assert!(nv.join("nvml.json").is_file());
    let doc = json_of(&["--root", nv.to_str().unwrap(), "--json"], 0);
    let names: Vec<&str> = doc["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["NVIDIA H200", "NVIDIA H200"]);
    let regions = |p: &serde_json::Value| -> Vec<String> {
        p["usage"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|u| u["region"].as_str().map(str::to_string))
            .collect()
    };
    let ranks: Vec<Vec<String>> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["rank"].is_u64())
        .map(regions)
        .collect();
    assert_eq!(ranks.len(), 2);
    for r in &ranks {
        assert_eq!(r.iter().filter(|g| *g == "vram").count(), 2, "{r:?}");
        assert!(r.contains(&"pinned-shmem".to_string()), "{r:?}");
    }
}
