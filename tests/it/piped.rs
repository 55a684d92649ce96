//! Piped text (issue 35 item 3): without `COLUMNS` nothing is folded, so every finding is one
//! line for grep, awk and logs (as `ls` and `git` do); with `COLUMNS` the text fits it. Every
//! command with a text view runs through `| cat` and `| grep` in a shell, as scripts run it.

use crate::common;
use common::*;
use std::path::Path;
use std::process::Command;

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// `gpuledger ARGS | FILTER` in sh (FILTER may read `$PATTERN`), with `COLUMNS` set to `columns`
/// or removed; the pipeline must succeed.
fn piped(args: &[&str], columns: Option<usize>, filter: &str, pattern: &str) -> String {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("\"$0\" \"$@\" | {filter}"))
        .arg(env!("CARGO_BIN_EXE_gpuledger"))
        .args(args)
        .env("PATTERN", pattern);
    match columns {
        Some(c) => cmd.env("COLUMNS", c.to_string()),
        None => cmd.env_remove("COLUMNS"),
    };
    String::from_utf8(run_ok(&mut cmd).stdout).expect("utf-8 output")
}

/// `gpuledger ARGS | cat`.
fn cat(args: &[&str], columns: Option<usize>) -> String {
    piped(args, columns, "cat", "")
}

/// `gpuledger ARGS | grep -e PATTERN`, line by line.
fn grep(args: &[&str], pattern: &str) -> Vec<String> {
    piped(args, None, "grep -e \"$PATTERN\"", pattern)
        .lines()
        .map(String::from)
        .collect()
}

/// Lines wider than `width` that could have been folded (they hold a space after their indent).
fn foldable_over(text: &str, width: usize) -> Vec<&str> {
    text.lines()
        .filter(|l| l.chars().count() > width && l.trim().contains(' '))
        .collect()
}

/// The JSON document's findings' messages, each found whole on one line of `text`.
fn assert_messages_on_one_line(what: &str, doc: &serde_json::Value, text: &str) {
    let findings = doc["findings"].as_array().expect("a findings array");
    assert!(!findings.is_empty(), "{what}: no findings in {doc}");
    for f in findings {
        let message = f["message"].as_str().expect("a message");
        assert!(
            text.lines().any(|l| l.contains(message)),
            "{what}: {message:?} is not on one line of\n{text}"
        );
    }
}

/// `text` folded at `width` (every foldable line fits) and, unfolded, `wide` is fewer lines with
/// one wider than `width`.
fn assert_columns_honoured(what: &str, text: &str, wide: &str, width: usize) {
    let over = foldable_over(text, width);
    assert!(over.is_empty(), "{what} at COLUMNS={width}: {over:#?}");
    assert!(
        wide.lines().count() < text.lines().count()
            && wide.lines().any(|l| l.chars().count() > width),
        "{what}: unfolded it should be fewer, longer lines:\n{wide}"
    );
}

/// A short recording of `root`.
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

#[test]
fn a_piped_snapshot_is_one_finding_per_line_and_columns_is_honoured() {
    let seed = fixture("seed-2622");
    let args = ["--root", path(&seed)];
    let text = cat(&args, None);
    let doc = json_of(&["--root", path(&seed), "--json"], 0);
    assert_messages_on_one_line("snapshot", &doc, &text);
    assert!(
        text.starts_with(
            "CRITICAL: 4 findings (peer_mirror × 2, driver_held_host, known_issue); 64.0 GiB host, 25.9 GiB driver-held\n"
        ),
        "{text}"
    );
    let mirrors = grep(&args, "CRITICAL  peer_mirror:");
    assert_eq!(mirrors.len(), 2, "{mirrors:#?}");
    for l in &mirrors {
        assert!(
            l.contains("rank ") && l.contains("pinned") && l.ends_with("see --explain peer_mirror"),
            "{l}"
        );
    }
    for width in [100, 200] {
        let folded = cat(&args, Some(width));
        assert!(foldable_over(&folded, width).is_empty(), "{folded}");
    }
    assert_columns_honoured("snapshot", &cat(&args, Some(100)), &text, 100);
    let wide = cat(&args, Some(200));
    assert!(wide.lines().any(|l| l.chars().count() > 100), "{wide}");
    assert_eq!(
        wide.lines().next(),
        text.lines().next(),
        "the verdict fits 200"
    );
}

#[test]
fn piped_show_diff_and_report_keep_each_finding_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed.ledger");
    record(&fixture("seed-2622"), &seed);
    let other = tmp.path().join("mainline.ledger");
    record(&fixture("seed-mainline"), &other);

    let show = ["show", path(&seed)];
    let text = cat(&show, None);
    assert_messages_on_one_line("show", &json_of(&["show", path(&seed), "--json"], 0), &text);
    let rows = grep(&show, "CRITICAL  peer_mirror at ");
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        rows.iter()
            .all(|l| l.contains("rank ") && l.contains("(backing pinned)")),
        "{rows:#?}"
    );
    assert_columns_honoured("show", &cat(&show, Some(100)), &text, 100);

    let diff = ["diff", path(&seed), path(&other)];
    assert_columns_honoured("diff", &cat(&diff, Some(100)), &cat(&diff, None), 100);

    let report = cat(&["report", path(&seed)], None);
    let mirrors: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("- **critical** `peer_mirror`"))
        .collect();
    assert_eq!(
        mirrors.len(),
        4,
        "the snapshot's two and the recording's: {report}"
    );
    assert!(
        mirrors
            .iter()
            .all(|l| l.ends_with("see --explain peer\\_mirror")),
        "{mirrors:#?}"
    );
}

#[test]
fn piped_doctor_explain_and_demo_fold_only_to_columns() {
    let seed = fixture("seed-2622");
    for args in [
        &["--root", path(&seed), "doctor"][..],
        &["--explain", "peer_mirror"][..],
        &["demo"][..],
    ] {
        let what = format!("{args:?}");
        assert_columns_honoured(&what, &cat(args, Some(100)), &cat(args, None), 100);
    }
    assert_eq!(
        cat(&["--explain", "peer_mirror"], None),
        gpuledger::findings::explain("peer_mirror").unwrap(),
        "piped without COLUMNS, the explanation is printed as written"
    );
    let demo = grep(&["demo"], "CRITICAL  peer_mirror: ");
    assert!(
        demo.len() >= 2
            && demo
                .iter()
                .all(|l| l.ends_with("see --explain peer_mirror")),
        "{demo:#?}"
    );
}
