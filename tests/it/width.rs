//! The text outputs for people fit 80 columns when stdout is not a terminal (issue 27 item 7):
//! snapshot, show (one recording and a job of several), diff; they open with a one-line verdict,
//! list findings most severe first, and fold many findings of one kind into one line unless -v
//! (issue 24 item 7). JSON keeps every finding.

use crate::common;
use common::*;
use std::path::Path;

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// Lines over 80 characters, with their number, for the assertion message.
fn too_wide(text: &str) -> Vec<(usize, usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.chars().count(), l))
        .filter(|(_, n, _)| *n > 80)
        .collect()
}

fn assert_fits(what: &str, text: &str) {
    let wide = too_wide(text);
    assert!(wide.is_empty(), "{what}: lines over 80 columns: {wide:#?}");
}

/// A simulated tree of `ranks` ranks on as many devices, at 40 s, backing registered-only (every peer
/// mirror is an INFO finding, and the job is alive).
fn simulated(dir: &Path, ranks: u32) -> std::path::PathBuf {
    let out = dir.join(format!("sim-{ranks}"));
    let ranks = ranks.to_string();
    stdout_of(
        &[
            "simulate",
            "ddp-peer-mirror",
            "--ranks",
            &ranks,
            "--backing",
            "registered-only",
            "--at",
            "40s",
            "--out",
            path(&out),
        ],
        0,
    );
    out
}

/// A short recording of the tree at `root`.
fn record(root: &Path, ledger: &Path) {
    stdout_of(
        &[
            "--root",
            path(root),
            "record",
            "--all",
            "--duration",
            "200ms",
            "--interval",
            "50ms",
            "-o",
            path(ledger),
        ],
        0,
    );
}

/// The severity words of the finding rows, in order.
fn severities(text: &str, section: &str) -> Vec<u8> {
    text.split(section)
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter_map(|l| match l.get(..12) {
            Some("  CRITICAL  ") => Some(2),
            Some("  WARNING   ") => Some(1),
            Some("  INFO      ") => Some(0),
            _ => None,
        })
        .collect()
}

#[test]
fn snapshots_of_every_fixture_and_large_simulated_machines_fit_80_columns() {
    for flags in [&[][..], &["-v"][..]] {
        for (name, text) in fixture_snapshots(flags) {
            assert_fits(&format!("{name} {flags:?}"), &text);
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    for ranks in [8, 64] {
        let tree = simulated(tmp.path(), ranks);
        let text = stdout_of(&["--root", path(&tree)], 0);
        assert_fits(&format!("{ranks} ranks"), &text);
        let mirrors = ranks * (ranks - 1);
        assert!(
            text.contains(&format!(
                "peer_mirror: {mirrors} findings, {ranks} processes"
            )),
            "{text}"
        );
        let doc = json_of(&["--root", path(&tree), "--json"], 0);
        let listed = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "peer_mirror")
            .count();
        assert_eq!(listed as u32, mirrors, "JSON keeps every finding");
    }
}

#[test]
fn show_diff_and_a_job_of_two_recordings_fit_80_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed.ledger");
    record(&fixture("seed-2622"), &seed);
    let tree = simulated(tmp.path(), 8);
    let eight = tmp.path().join("eight.ledger");
    record(&tree, &eight);
    for ledger in [&seed, &eight] {
        for flags in [&[][..], &["-v"][..]] {
            let mut args = vec!["show", path(ledger)];
            args.extend(flags);
            assert_fits(&format!("{args:?}"), &stdout_of(&args, 0));
        }
    }
    let diff = stdout_of(&["diff", path(&seed), path(&eight)], 0);
    assert_fits("diff", &diff);
    let job = stdout_of(&["show", path(&seed), path(&eight)], 0);
    assert_fits("show of two recordings", &job);
}

#[test]
fn show_of_a_traced_recording_fits_80_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = traced_recording(tmp.path(), "traced.ledger", true);
    let show = stdout_of(&["show", path(&ledger)], 0);
    assert!(show.contains("Counters against calls"), "{show}");
    assert!(
        show.contains("(cudaHostRegister)"),
        "the registered pages are named: {show}"
    );
    assert_fits("show of a traced recording", &show);
}

#[test]
fn a_verdict_line_opens_the_snapshot_and_show() {
    let seed = fixture("seed-2622");
    let text = stdout_of(&["--root", path(&seed)], 0);
    assert!(
        text.starts_with("CRITICAL: 4 findings (peer_mirror × 2, driver_held_host, known_issue); 64.0 GiB\n          host, 25.9 GiB driver-held\n"),
        "{text}"
    );
    let healthy = stdout_of(&["--root", path(&fixture("xe-two-tile"))], 0);
    assert!(healthy.starts_with("OK: no findings; "), "{healthy}");

    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("seed.ledger");
    record(&seed, &ledger);
    let show = stdout_of(&["show", path(&ledger)], 0);
    let first = show.lines().next().unwrap();
    assert!(
        first.starts_with("CRITICAL: 4 findings (peer_mirror × 2, driver_held_host, known_issue)"),
        "{show}"
    );
}

#[test]
fn findings_come_most_severe_first_in_snapshot_show_and_report() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    stdout_of(&["demo", "--keep", path(&demo)], 0);
    // The pinned run's timeline has 2 CRITICAL mirrors and 9 INFO growth findings, found in
    // the order of the series (INFO first).
    let ledger = demo.join("A-pinned.ledger");
    let show = stdout_of(&["show", path(&ledger)], 0);
    let mut views = vec![(
        "show".to_string(),
        severities(&show, "\nTimeline findings\n"),
    )];
    for (name, text) in fixture_snapshots(&["-v"]) {
        views.push((name.to_string(), severities(&text, "\nFindings\n")));
    }
    for (what, order) in &views {
        assert!(
            order.windows(2).all(|w| w[0] >= w[1]),
            "{what} lists a less severe finding first: {order:?}"
        );
    }
    assert!(views[0].1.len() >= 10 && views[0].1[0] == 2, "{show}");
    let report = stdout_of(&["report", path(&ledger)], 0);
    let order: Vec<u8> = report
        .lines()
        .skip_while(|l| !l.starts_with("#### Recording"))
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| {
            [
                ("- **critical**", 2),
                ("- **warning**", 1),
                ("- **info**", 0),
            ]
            .into_iter()
            .find(|(p, _)| l.starts_with(p))
            .map(|(_, s)| s)
        })
        .collect();
    assert!(order.len() >= 10 && order[0] == 2, "{report}");
    assert!(
        order.windows(2).all(|w| w[0] >= w[1]),
        "{order:?}\n{report}"
    );
}

#[test]
fn show_and_report_group_many_findings_of_one_kind_and_verbose_lists_each() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = simulated(tmp.path(), 8);
    let ledger = tmp.path().join("eight.ledger");
    record(&tree, &ledger);
    let rows = |text: &str| text.matches(" peer_mirror at ").count();

    let show = stdout_of(&["show", path(&ledger)], 0);
    assert!(
        show.contains("peer_mirror: 56 findings, 8 processes"),
        "{show}"
    );
    assert_eq!(rows(&show), 0, "{show}");
    let each = stdout_of(&["show", path(&ledger), "-v"], 0);
    assert_eq!(rows(&each), 56, "{each}");
    let doc = json_of(&["show", path(&ledger), "--json"], 0);
    let listed = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "peer_mirror")
        .count();
    assert_eq!(listed, 56, "JSON keeps every finding");

    let args = ["--root", path(&tree), "report", path(&ledger)];
    let report = stdout_of(&args, 0);
    let grouped = report
        .matches("`peer_mirror`: 56 findings, 8 processes")
        .count();
    assert_eq!(grouped, 2, "the snapshot's and the recording's: {report}");
    let mut verbose = args.to_vec();
    verbose.push("-v");
    let report = stdout_of(&verbose, 0);
    assert_eq!(report.matches("`peer_mirror` at ").count(), 56, "{report}");
    assert_eq!(
        report.matches("`peer_mirror`: rank ").count(),
        56,
        "{report}"
    );
}

/// On a terminal the terminal's width is used: 120 columns keep the device table whole and the
/// verdict on one line. Runs under `script` (util-linux) for a pseudo-terminal.
#[test]
fn a_wider_terminal_gets_wider_tables() {
    let bin = env!("CARGO_BIN_EXE_gpuledger");
    let seed = fixture("seed-2622");
    let cmd = format!(
        "stty rows 40 cols 120; {} --root {} --color never",
        shlex::try_quote(bin).unwrap(),
        shlex::try_quote(path(&seed)).unwrap()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("COLUMNS")
        .output();
    let Ok(out) = out else {
        eprintln!("skipped: no `script` to give gpuledger a terminal");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.ends_with("; 64.0 GiB host, 25.9 GiB driver-held"),
        "{text}"
    );
    assert!(text.contains("  DEVICE        MINORS  "), "{text}");
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest > 80 && widest <= 120, "{widest}: {text}");
}

#[test]
fn doctor_fits_80_columns() {
    for name in ["seed-2622", "nvidia", "amdgpu", "xe-two-tile"] {
        let root = fixture(name);
        let text = stdout_of(&["--root", path(&root), "doctor"], 0);
        assert_fits(&format!("doctor of {name}"), &text);
    }
}
