//! The known-issues base in every view: the snapshot (table and JSON), `serve`, `record` + `show`
//! and `report` carry the same `known_issue` verdict for a simulated 2× B70 machine with
//! compute-runtime 26.22 installed, and none for 26.05 (before the defect was introduced); an
//! NVIDIA machine gets gpuledger's own limitation from `doctor`, never a finding.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

const C953: &str = "cr-953-bmg-eager-peer-pinning";

/// A simulated 2× B70 job with pinned backing and intel-opencl-icd `version` installed.
fn machine(dir: &Path, version: &str) -> PathBuf {
    let tree = dir.join(format!("sim-{version}"));
    let t = tree.to_str().unwrap();
    stdout_of(&["simulate", "ddp-peer-mirror", "--out", t], 0);
    std::fs::create_dir_all(tree.join("var/lib/dpkg")).unwrap();
    std::fs::write(
        tree.join("var/lib/dpkg/status"),
        format!("Package: intel-opencl-icd\nStatus: install ok installed\nVersion: {version}-0\n"),
    )
    .unwrap();
    tree
}

/// (severity, issue) of every known_issue finding of a snapshot's JSON.
fn known(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "known_issue")
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (s("severity"), s("issue"))
        })
        .collect()
}

#[test]
fn snapshot_names_the_entry_with_its_reasons_and_only_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let bad = machine(dir.path(), "26.22.38646.4");
    let doc = json_of(&["--root", bad.to_str().unwrap(), "--json"], 0);
    let found = known(&doc);
    assert!(
        found.contains(&("critical".into(), C953.into())),
        "versions and the pinned peer_mirror: {found:?}"
    );
    let table = stdout_of(&["--root", bad.to_str().unwrap()], 0);
    let rows = finding_rows(&table);
    let line = rows.iter().find(|l| l.contains(C953)).unwrap();
    assert!(line.contains("CRITICAL"), "{line}");
    assert!(line.contains("26.22.38646.4"), "names the version: {line}");
    assert!(line.contains("peer_mirror finding with pinned backing present"));
    assert!(
        line.contains("EnableDeferBacking=0"),
        "the workaround: {line}"
    );

    let good = machine(dir.path(), "26.05.37020.3");
    let doc = json_of(&["--root", good.to_str().unwrap(), "--json"], 0);
    assert!(
        known(&doc).iter().all(|(_, id)| id != C953),
        "26.05 is before the defect: {:?}",
        known(&doc)
    );

    let out = stdout_of(&["--explain", "known_issue"], 0);
    assert!(out.starts_with("known_issue:"), "{out}");
    assert!(out.contains("gpuledger doctor"), "{out}");
}

#[test]
fn serve_exports_one_series_per_matching_entry() {
    let dir = tempfile::tempdir().unwrap();
    let bad = machine(dir.path(), "26.22.38646.4");
    let server = serve_root(&bad, &["--interval", "1s"]);
    let text = server.get("/metrics");
    let line = format!("gpuledger_known_issue{{issue=\"{C953}\",severity=\"critical\"}} 1");
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("gpuledger_findings{kind=\"known_issue\",severity=\"critical\"}"));
}

#[test]
fn record_show_and_report_carry_it() {
    let dir = tempfile::tempdir().unwrap();
    let bad = machine(dir.path(), "26.22.38646.4");
    let ledger = dir.path().join("bad.ledger");
    let (b, l) = (bad.to_str().unwrap(), ledger.to_str().unwrap());
    run_ok(&mut record_tree(&bad, "100ms", "300ms", &ledger));
    let shown = stdout_of(&["show", l], 0);
    let rows = finding_rows(&shown);
    let line = rows.iter().find(|l| l.contains(C953)).expect(&shown);
    assert!(line.contains("CRITICAL  known_issue"), "{line}");

    let report = stdout_of(&["--root", b, "report", l], 0);
    let related = report
        .split("## Possibly related")
        .nth(1)
        .expect("the section");
    assert!(
        related.contains(&format!("**critical** `{C953}`")),
        "{related}"
    );
    assert!(related.contains("https://github.com/intel/compute-runtime/issues/953"));
    assert!(related.contains("workaround:"));
    assert!(report.contains(&format!("see \"Possibly related\": {C953}")));
    // The one next step, in the words doctor and the finding use.
    let first = "Set NEOReadDebugKeys=1 EnableDeferBacking=0 for the job";
    let step = related.split("**Next step**").nth(1).expect(related);
    assert!(
        step.starts_with(&format!(" (from `{C953}`): {first}")),
        "{step}"
    );
    assert!(
        step.contains("gpuledger experiment --controls no-defer-backing"),
        "{step}"
    );
    let doctor = stdout_of(&["--root", b, "doctor"], 0);
    assert!(doctor.contains(&format!("try first: {first}")), "{doctor}");
}

/// gpuledger's own blind spot on NVIDIA (cudaHostRegister moves no counter) is not a known
/// issue: no finding in the snapshot of an H200, and `doctor` says it as a limitation.
#[test]
fn an_nvidia_machine_gets_a_limitation_note_not_a_finding() {
    let fixture = fixture("nvidia");
    let root = fixture.to_str().unwrap();
    let doc = json_of(&["--root", root, "--json"], 0);
    assert!(known(&doc).is_empty(), "{doc}");
    let text = stdout_of(&["doctor", "--root", root], 0);
    let notes = text
        .split("Limitations of gpuledger")
        .nth(1)
        .unwrap_or_else(|| panic!("no limitations note: {text}"));
    assert!(notes.contains("cudaHostRegister"), "{notes}");
    let doctor = json_of(&["doctor", "--root", root, "--json"], 0);
    assert_eq!(doctor["limitations"][0]["vendor"], "10de", "{doctor}");
    assert_eq!(doctor["known_issues"]["matches"], serde_json::json!([]));
}

/// Each finding row of a text view with its wrapped continuation lines, on one line.
fn finding_rows(text: &str) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    for l in text.lines() {
        let continued = l.starts_with("            ") && !rows.is_empty();
        if continued {
            let last = rows.last_mut().unwrap();
            last.push(' ');
            last.push_str(l.trim());
        } else if ["  CRITICAL", "  WARNING", "  INFO"]
            .iter()
            .any(|p| l.starts_with(p))
        {
            rows.push(l.to_string());
        } else if !l.starts_with("            ") {
            rows.push(String::new());
        }
    }
    rows
}
