//! One verdict per fact: a run's peer_mirror findings carry the same severity and bytes in
//! `snapshot --json` (of the tree at the peak), `show --json`, `diff --json`, `report` and
//! `/metrics`. The demo's registered-only run passes through a moment where the backing is not yet
//! known (warning) before it settles on not pinned (info): the recording must still say info.

use crate::common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// (pid, severity, bytes) of each peer_mirror.
type Mirrors = BTreeSet<(u64, String, u64)>;

fn mirrors(list: &Value, bytes_key: &str) -> Mirrors {
    list.as_array()
        .expect("a list of findings")
        .iter()
        .filter(|f| f["kind"] == "peer_mirror")
        .map(|f| {
            (
                f["pid"].as_u64().expect("pid"),
                f["severity"].as_str().expect("severity").to_string(),
                f[bytes_key].as_u64().expect("bytes"),
            )
        })
        .collect()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// `gpuledger_finding_bytes{kind="peer_mirror",…}` lines as (pid, severity, bytes).
fn metric_mirrors(text: &str) -> Mirrors {
    text.lines()
        .filter(|l| l.starts_with("gpuledger_finding_bytes{") && l.contains("kind=\"peer_mirror\""))
        .map(|l| {
            let label = |k: &str| {
                let start = l.find(&format!("{k}=\"")).expect("label") + k.len() + 2;
                l[start..]
                    .split('"')
                    .next()
                    .expect("closing quote")
                    .to_string()
            };
            let value: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            (
                label("pid").parse().unwrap(),
                label("severity"),
                value as u64,
            )
        })
        .collect()
}

fn metrics(tree: &Path) -> String {
    let server = serve_root(tree, &[]);
    server.get("/metrics")
}

/// `**severity** `peer_mirror`` lines of a report, by severity.
fn report_severities(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| l.contains("`peer_mirror`") && l.starts_with("- **"))
        .map(|l| l[4..].split("**").next().unwrap().to_string())
        .collect()
}

#[test]
fn peer_mirror_severity_and_bytes_agree_in_every_view() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    stdout_of(&["demo", "--keep", path(&demo)], 0);
    let (a, b) = (
        demo.join("A-pinned.ledger"),
        demo.join("B-registered-only.ledger"),
    );
    let diff = json_of(&["diff", "--json", path(&a), path(&b)], 0);
    for (i, backing, ledger, expected) in [
        (0, "pinned", &a, "critical"),
        (1, "registered-only", &b, "info"),
    ] {
        let tree = dir.path().join(backing);
        stdout_of(
            &[
                "simulate",
                "ddp-peer-mirror",
                "--backing",
                backing,
                "--out",
                path(&tree),
            ],
            0,
        );
        let snap = json_of(&["--root", path(&tree), "--json"], 0);
        let at_peak = mirrors(&snap["findings"], "bytes");
        assert_eq!(
            at_peak.len(),
            2,
            "{backing}: one mirror per rank: {at_peak:?}"
        );
        assert!(
            at_peak.iter().all(|m| m.1 == expected),
            "{backing}: snapshot says {at_peak:?}"
        );

        let show = json_of(&["show", "--json", path(ledger)], 0);
        assert_eq!(
            mirrors(&show["recorded_findings"], "bytes_peak"),
            at_peak,
            "{backing}: show, recorded"
        );
        assert_eq!(
            mirrors(&show["findings"], "bytes"),
            at_peak,
            "{backing}: show, timeline"
        );
        for f in show["recorded_findings"].as_array().unwrap() {
            let text = stdout_of(&["show", path(ledger)], 0);
            let labelled = text.contains(&format!(
                "worst over time: {}",
                f["worst_severity"].as_str().unwrap()
            ));
            assert_eq!(
                labelled,
                f["worst_severity"] != f["severity"],
                "{backing}: a worse moment is labelled, never the verdict"
            );
        }
        assert_eq!(
            mirrors(&diff["peer_mirrors"][i], "bytes_peak"),
            at_peak,
            "{backing}: diff"
        );

        let report = stdout_of(
            &[
                "report",
                "--root",
                path(&tree),
                "--template",
                "generic",
                path(&a),
                path(&b),
            ],
            0,
        );
        let severities = report_severities(&report);
        // Two from the snapshot and two from this run's recording; all four say the same.
        assert_eq!(
            severities.iter().filter(|s| *s == expected).count(),
            4,
            "{backing}: report says {severities:?}"
        );
        assert!(!severities.iter().any(|s| s == "warning"), "{severities:?}");

        assert_eq!(
            metric_mirrors(&metrics(&tree)),
            at_peak,
            "{backing}: /metrics"
        );
    }
    let verdict = diff["verdict"].as_str().unwrap();
    assert!(
        verdict.ends_with("in B the registrations are bookkeeping only"),
        "{verdict}"
    );
    assert_eq!(
        diff["registrations"],
        serde_json::json!(["pinned", "not_pinned"])
    );
}

#[test]
fn diff_of_another_job_warns_and_gives_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    stdout_of(&["demo", "--keep", path(&demo)], 0);
    let idle = dir.path().join("idle.ledger");
    let tree = dir.path().join("tree");
    stdout_of(&["simulate", "single-gpu", "--out", path(&tree)], 0);
    run_ok(&mut record_tree(&tree, "100ms", "300ms", &idle));
    let d = json_of(
        &[
            "diff",
            "--json",
            path(&demo.join("A-pinned.ledger")),
            path(&idle),
        ],
        0,
    );
    let text = serde_json::to_string(&d).unwrap();
    assert!(!text.contains("bookkeeping only"), "{text}");
    assert!(
        d["warning"]
            .as_str()
            .unwrap()
            .contains("ran different jobs"),
        "{text}"
    );
    assert!(d["verdict"].is_null(), "{text}");
}
