//! One flag vocabulary: every JSON document names its schema, the reporting commands take
//! `--format` and `--fail-on`, and `plot`/`report` refuse an existing output unless `--force`.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// The demo's two recordings (A: peer registrations pinned, B: registered only) in `dir`.
fn demo(dir: &Path) -> (PathBuf, PathBuf) {
    stdout_of(&["demo", "-o", dir.to_str().unwrap()], 0);
    (
        dir.join("A-pinned.ledger"),
        dir.join("B-registered-only.ledger"),
    )
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
    stdout_of(
        &["show", "--format", "csv", "--fail-on", "critical", s(&a)],
        3,
    );
}

/// The CSV rows of `args` (header first), read back by a CSV reader.
fn csv_rows(args: &[&str]) -> Vec<Vec<String>> {
    let text = stdout_of(args, 0);
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

#[test]
fn show_diff_and_doctor_print_csv_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = demo(tmp.path());
    let show = csv_rows(&["show", "--format", "csv", s(&a)]);
    assert_eq!(
        show[0],
        [
            "recording",
            "pid",
            "rank",
            "device",
            "home",
            "device_local_peak",
            "host_peak"
        ]
    );
    assert_eq!(show.len() - 1, 4, "2 ranks x 2 devices: {show:?}");
    let peer_host: u64 = show
        .iter()
        .skip(1)
        .filter(|r| r[4] == "no")
        .map(|r| r[6].parse::<u64>().unwrap())
        .sum();
    assert!(peer_host > 16 << 30, "the pinned run's mirrors: {show:?}");
    let job = csv_rows(&["show", "--format", "csv", s(&a), s(&b)]);
    assert_eq!(job.len() - 1, 8, "both recordings' rows: {job:?}");

    let diff = csv_rows(&["diff", "--format", "csv", s(&a), s(&b)]);
    assert_eq!(diff[0], ["what", "unit", "a", "b", "b_minus_a"]);
    let bytes: Vec<&Vec<String>> = diff
        .iter()
        .filter(|r| r[1] == "bytes" && !r[2].is_empty() && !r[3].is_empty())
        .collect();
    assert!(!bytes.is_empty(), "{diff:?}");
    for r in bytes {
        let (x, y): (i128, i128) = (r[2].parse().unwrap(), r[3].parse().unwrap());
        assert_eq!(r[4].parse::<i128>().unwrap(), y - x, "{r:?}");
    }

    let seed = fixture("seed-2622");
    let doctor = csv_rows(&["--root", s(&seed), "doctor", "--format", "csv"]);
    assert_eq!(doctor[0], ["kind", "id", "severity", "applies", "detail"]);
    assert_eq!(
        doctor[1][..4],
        ["finding", "peer_mirror", "critical", "yes"]
    );
    assert!(doctor
        .iter()
        .any(|r| r[0] == "known_issue" && r[1] == "cr-953-bmg-eager-peer-pinning"));
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
    let kept = tmp.path().join("kept");
    std::fs::create_dir_all(kept.join("A-eager")).unwrap();
    std::fs::write(kept.join("A-eager.ledger"), "an earlier demo's recording").unwrap();
    stdout_of(&["demo", "--keep", s(&kept)], 0);
    assert!(kept.join("A-pinned.ledger").is_file());
    // The names earlier demos wrote stay, as links to the renamed files.
    for (old, new) in [
        ("A-eager", "A-pinned"),
        ("A-eager.ledger", "A-pinned.ledger"),
        ("A-eager-snapshot", "A-pinned-snapshot"),
        ("B-deferred", "B-registered-only"),
        ("B-deferred.ledger", "B-registered-only.ledger"),
    ] {
        assert_eq!(
            std::fs::read_link(kept.join(old)).unwrap(),
            Path::new(new),
            "{old}"
        );
    }
    let old = stdout_of(&["show", s(&kept.join("A-eager.ledger"))], 0);
    let new = stdout_of(&["show", s(&kept.join("A-pinned.ledger"))], 0);
    assert_eq!(old.replace("A-eager.ledger", "A-pinned.ledger"), new);
    assert!(old.contains("CRITICAL  peer_mirror"), "{old}");
}
