//! One flag vocabulary: every JSON document names its schema, the reporting commands take
//! `--format` and `--fail-on`, and `plot`/`report` refuse an existing output unless `--force`.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// The demo's two recordings (A: eager pinning, B: deferred) in `dir`.
fn demo(dir: &Path) -> (PathBuf, PathBuf) {
    stdout_of(&["demo", "-o", dir.to_str().unwrap()], 0);
    (dir.join("A-eager.ledger"), dir.join("B-deferred.ledger"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_json_document_names_its_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = demo(tmp.path());
    let seed = fixture("seed-2622");
    let documents = [
        ("snapshot", json_of(&["--root", s(&seed), "--json"], 0)),
        ("show", json_of(&["show", "--json", s(&a)], 0)),
        (
            "show job",
            json_of(&["show", "--format", "json", s(&a), s(&b)], 0),
        ),
        ("diff", json_of(&["diff", "--json", s(&a), s(&b)], 0)),
        (
            "doctor",
            json_of(&["doctor", "--root", s(&seed), "--format", "json"], 0),
        ),
    ];
    for (what, doc) in documents {
        let schema = doc["schema"].as_str().unwrap_or_default();
        assert!(schema.starts_with("gpuledger."), "{what}: {doc}");
    }
    assert_eq!(
        json_of(&["diff", "--json", s(&a), s(&b)], 0)["schema"],
        "gpuledger.diff/1"
    );
}

#[test]
fn show_and_diff_fail_on_the_bad_runs_findings() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = demo(tmp.path());
    stdout_of(&["show", "--fail-on", "critical", s(&a)], 3);
    stdout_of(&["show", "--fail-on", "warning", s(&b)], 0);
    stdout_of(&["diff", "--fail-on", "critical", s(&a), s(&b)], 3);
    stdout_of(&["diff", s(&a), s(&b)], 0);
    let out = run(&["show", "--format", "csv", s(&a)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[possible values: table, json]"), "{err}");
}

#[test]
fn plot_and_report_refuse_an_existing_output_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _) = demo(&tmp.path().join("demo"));
    let seed = fixture("seed-2622");
    let cases: [(&str, Vec<&str>); 2] = [
        ("page.html", vec!["plot", s(&a)]),
        ("bug.md", vec!["--root", s(&seed), "report"]),
    ];
    for (name, args) in cases {
        let out_file = tmp.path().join(name);
        std::fs::write(&out_file, "mine").unwrap();
        let refused = run(&[&args[..], &["-o", s(&out_file)]].concat());
        assert_eq!(refused.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(
            err.contains("already exists") && err.contains("add --force"),
            "{name}: {err}"
        );
        assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "mine");
        stdout_of(&[&args[..], &["-o", s(&out_file), "--force"]].concat(), 0);
        assert_ne!(
            std::fs::read_to_string(&out_file).unwrap(),
            "mine",
            "{name}"
        );
    }
}

#[test]
fn the_old_output_spellings_still_work() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    stdout_of(&["simulate", "single-gpu", "--out", s(&tree)], 0);
    assert!(tree.join("proc").is_dir());
    stdout_of(&["demo", "--keep", s(&tmp.path().join("kept"))], 0);
    assert!(tmp.path().join("kept/A-eager.ledger").is_file());
}
