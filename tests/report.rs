//! `report`: golden Markdown on fixtures, with and without recordings; redaction; "not found".

mod common;
use common::*;

#[test]
fn intel_template_golden_on_the_seed() {
    let root = fixture("seed-2622");
    let out = stdout_of(&["--root", root.to_str().unwrap(), "report"], 0);
    assert_golden("report-seed-2622-intel.md", &out);
    for section in [
        "## Pre-submission checklist",
        "## GPU hardware",
        "## DRI devices information",
        "## Detailed GPU information",
        "## Driver version and installation",
        "## Linux distribution and kernel",
        "## Observed behaviour",
        "## Expected behaviour",
        "## Steps to reproduce",
        "## Reproduction rate",
        "## Regression",
        "## System logs",
    ] {
        assert!(out.contains(section), "missing {section}");
    }
    assert!(out.contains("fd4 /dev/dri/renderD129 (0000:04:00.0): drm-resident-gtt: 8913000 KiB  drm-resident-vram0: 191268 KiB"));
    assert!(
        out.contains("| GPU runtime packages | not found |"),
        "a capture has no package database"
    );
    assert!(!out.contains("HF_TOKEN") && !out.contains("/home/user"));
}

#[test]
fn generic_template_with_two_recordings_has_the_diff() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(run(&["demo", "--keep", tmp.path().to_str().unwrap()])
        .status
        .success());
    let a = tmp.path().join("A-eager.ledger");
    let b = tmp.path().join("B-deferred.ledger");
    let root = fixture("seed-2605");
    let out = stdout_of(
        &[
            "--root",
            root.to_str().unwrap(),
            "report",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--template",
            "generic",
        ],
        0,
    );
    let out = out.replace(tmp.path().to_str().unwrap(), "<DIR>");
    assert_golden("report-seed-2605-generic-diff.md", &out);
    assert!(out.contains("#### Bad vs good"));
    assert!(out.contains("A shows the peer-mirror pinning"));
    assert!(!out.contains("## Pre-submission checklist"));
}

#[test]
fn writes_a_file_and_redacts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(
        root.join("proc/meminfo"),
        "MemTotal: 1024 kB\nMemAvailable: 512 kB\n",
    )
    .unwrap();
    std::fs::write(
        root.join("proc/version"),
        "Linux version 6.18.0 (alice@buildbox) #1 SMP\n",
    )
    .unwrap();
    std::fs::write(root.join("proc/sys/kernel/hostname"), "gpu-node-17\n").unwrap();
    let out_file = tmp.path().join("bug.md");
    let out = run(&[
        "--root",
        root.to_str().unwrap(),
        "report",
        "--redact",
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(
        text.contains("(<user>@<host>)") && !text.contains("alice") && !text.contains("buildbox"),
        "{text}"
    );
    assert!(text.contains("not found: no GPU device"));
    let unredacted = stdout_of(&["--root", root.to_str().unwrap(), "report"], 0);
    assert!(unredacted.contains("alice@buildbox"));
}
