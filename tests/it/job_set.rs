//! Several recordings of one job, one per node: `show` merges them by rank and node and names the
//! worst node; `diff` compares two such sets.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// Records a simulated node (`ddp-peer-mirror` with `backing`) into `dir/NODE.ledger`.
fn node(dir: &Path, work: &Path, name: &str, backing: &str) -> PathBuf {
    node_labelled(dir, work, name, backing, &[])
}

/// The same with `--label` arguments.
fn node_labelled(dir: &Path, work: &Path, name: &str, backing: &str, labels: &[&str]) -> PathBuf {
    let tree = work.join(format!("tree-{name}-{backing}"));
    let t = tree.to_str().unwrap();
    stdout_of(
        &[
            "simulate",
            "ddp-peer-mirror",
            "--backing",
            backing,
            "--out",
            t,
        ],
        0,
    );
    std::fs::create_dir_all(dir).unwrap();
    let ledger = dir.join(format!("{name}.ledger"));
    let mut record = record_tree(&tree, "100ms", "200ms", &ledger);
    for label in labels {
        record.args(["--label", label]);
    }
    run_ok(&mut record);
    ledger
}

#[test]
fn show_merges_nodes_and_names_the_worst() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job-42");
    node(&job, tmp.path(), "node-a", "registered-only");
    node(&job, tmp.path(), "node-b", "pinned");
    let j = job.to_str().unwrap();
    let text = stdout_of(&["show", j], 0);
    assert!(
        text.contains("\n\nJob of 2 recordings (nodes node-a, node-b)"),
        "{text}"
    );
    let worst = text.lines().find(|l| l.contains("worst node")).unwrap();
    assert!(worst.contains("node-b: critical peer_mirror"), "{worst}");
    assert!(
        text.contains("CRITICAL  [node-b] peer_mirror"),
        "findings carry their node: {text}"
    );
    assert!(text.contains("INFO      [node-a] peer_mirror"), "{text}");

    let doc: serde_json::Value =
        serde_json::from_str(&stdout_of(&["show", j, "--json"], 0)).unwrap();
    assert_eq!(doc["schema"], "gpuledger.show-job/1");
    assert_eq!(doc["worst_node"], "node-b");
    let peaks = doc["rank_peaks"].as_array().unwrap();
    assert_eq!(peaks.len(), 4, "two ranks on each node: {peaks:?}");
    let on_b: Vec<&serde_json::Value> = peaks.iter().filter(|p| p["node"] == "node-b").collect();
    assert!(on_b
        .iter()
        .all(|p| p["peer_host"].as_u64().unwrap() > 16 << 30));
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 2);

    // The same files named one by one read the same.
    let a = job.join("node-a.ledger");
    let b = job.join("node-b.ledger");
    let again = stdout_of(&["show", a.to_str().unwrap(), b.to_str().unwrap()], 0);
    assert_eq!(again, text);
}

#[test]
fn diff_compares_two_sets_and_a_dir_without_recordings_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad");
    let good = tmp.path().join("good");
    for n in ["n1", "n2"] {
        node(&bad, tmp.path(), n, "pinned");
        node(&good, tmp.path(), n, "registered-only");
    }
    let (b, g) = (bad.to_str().unwrap(), good.to_str().unwrap());
    let doc: serde_json::Value =
        serde_json::from_str(&stdout_of(&["diff", b, g, "--json"], 0)).unwrap();
    assert_eq!(
        doc["registrations"],
        serde_json::json!(["pinned", "not_pinned"])
    );
    let mirrors = doc["peer_mirrors"][0].as_array().unwrap();
    assert_eq!(mirrors.len(), 4, "both nodes' ranks");
    assert!(mirrors
        .iter()
        .any(|m| m["device"].as_str().unwrap().starts_with("n2/")));
    let text = stdout_of(&["diff", b, g], 0);
    assert!(text.contains("A shows the peer-mirror pinning"), "{text}");

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&["show", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds no *.ledger recordings"), "{err}");
}

#[test]
fn nodes_are_named_by_their_label_and_different_jobs_are_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("mixed");
    let labels = ["node=gpu-07", "slurm_job=41"];
    node_labelled(&job, tmp.path(), "x", "pinned", &labels);
    let labels = ["node=gpu-08", "slurm_job=42"];
    node_labelled(&job, tmp.path(), "y", "registered-only", &labels);
    let text = stdout_of(&["show", job.to_str().unwrap()], 0);
    assert!(
        text.contains("\n\nJob of 2 recordings (nodes gpu-07, gpu-08)"),
        "{text}"
    );
    assert!(
        text.contains("warning: the recordings name different jobs (41, 42)"),
        "{text}"
    );
    assert!(text.contains("worst node  gpu-07"), "{text}");

    let one = job.join("x.ledger");
    let doc: serde_json::Value =
        serde_json::from_str(&stdout_of(&["show", one.to_str().unwrap(), "--json"], 0)).unwrap();
    assert_eq!(doc["labels"]["node"], "gpu-07", "labels in show --json");
    assert_eq!(doc["labels"]["slurm_job"], "41");
}

#[test]
fn plot_and_report_draw_the_worst_node_and_list_every_node() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    node_labelled(&job, tmp.path(), "a", "registered-only", &["node=gpu-01"]);
    node_labelled(&job, tmp.path(), "b", "pinned", &["node=gpu-02"]);
    let j = job.to_str().unwrap();
    let page = tmp.path().join("p.html");
    stdout_of(&["plot", j, "-o", page.to_str().unwrap()], 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<section id=\"nodes\">"), "a nodes section");
    assert!(html.contains("node gpu-02, the worst of 2 nodes"));
    assert!(html.contains("gpu-01"), "every node listed");

    let tree = tmp.path().join("tree-a-registered-only");
    let t = tree.to_str().unwrap();
    let report = stdout_of(&["--root", t, "report", j, "--template", "generic"], 0);
    assert!(report.contains("### Nodes of a multi-node run"), "{report}");
    assert!(report.contains("worst node  gpu-02"), "{report}");
    let redacted = stdout_of(
        &[
            "--root",
            t,
            "report",
            j,
            "--template",
            "generic",
            "--redact",
        ],
        0,
    );
    assert!(
        !redacted.contains("gpu-01") && !redacted.contains("gpu-02"),
        "{redacted}"
    );
}

/// Two runs of different commands on this host, one after the other, put in one directory:
/// `show` still merges them but says why they do not look like one job's nodes.
#[test]
fn unrelated_recordings_in_one_directory_are_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("runs");
    std::fs::create_dir(&dir).unwrap();
    let jobs: [(&str, &[&str]); 2] = [
        ("first", &["sleep", "0.2"]),
        ("second", &["sh", "-c", "sleep 0.3"]),
    ];
    for (name, job) in jobs {
        let ledger = dir.join(format!("{name}.ledger"));
        run_ok(&mut record_job(None, "100ms", &ledger, job));
    }
    let text = stdout_of(&["show", dir.to_str().unwrap()], 0);
    assert!(
        text.contains("warning: the recordings name no job"),
        "{text}"
    );
    let doc = json_of(&["show", dir.to_str().unwrap(), "--json"], 0);
    let warning = doc["warning"].as_str().unwrap();
    for why in [
        "look like separate runs",
        "recorded more than once",
        "different programs (sh, sleep)",
        "times that do not overlap",
    ] {
        assert!(warning.contains(why), "{why}: {warning}");
    }
}
