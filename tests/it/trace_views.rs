//! The traced calls in every view, without a GPU: `record -- CMD` with a tracer library named in
//! GPULEDGER_TRACER, where the job is a Python script that sends what the tracer would (the wire
//! format of `tracer/wire`): 2 GiB registered, 1 GiB of device memory, 256 MiB pinned host
//! memory. `show` cross-checks the counters against the calls (the job holds no GPU memory any
//! counter sees and no device to carry its registered memory, so every call is "calls larger",
//! and the registered 2 GiB is named); `diff` against a run that makes no registration names it; `report` quotes the top
//! calls; `plot` draws a chart per API kind.

use crate::common;
use common::*;

#[test]
fn calls_are_cross_checked_compared_quoted_and_drawn() {
    let tmp = tempfile::tempdir().unwrap();
    let a = traced_recording(tmp.path(), "a.ledger", true);
    let b = traced_recording(tmp.path(), "b.ledger", false);
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());

    let show = stdout_of(&["show", a_s], 0);
    assert!(show.contains("Counters against calls"), "{show}");
    // The verdicts wrap to 80 columns: read the section's words.
    let checks = show.split("Counters against calls").nth(1).unwrap();
    let words = checks.split_whitespace().collect::<Vec<_>>().join(" ");
    let host = words
        .split(" host ")
        .nth(1)
        .unwrap_or_else(|| panic!("no host check in {show}"));
    assert!(host.contains("calls larger by 2.2 GiB"), "{host}");
    assert!(
        host.contains("2.0 GiB of the calls registered pages in place"),
        "{host}"
    );
    let json = json_of(&["show", a_s, "--json"], 0);
    let checks = json["call_checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(checks.iter().any(|c| c["class"] == "device"
        && c["agreement"]["agreement"] == "calls_larger"
        && c["traced_peak"] == 1u64 << 30));
    let rows = json["calls"]["rows"].as_array().unwrap();
    for api in ["device", "host_pinned", "registered"] {
        assert!(
            rows.iter()
                .any(|r| r["platform"] == "cuda" && r["api"] == api),
            "{api} in {rows:?}"
        );
    }

    let diff = stdout_of(&["diff", a_s, b_s], 0);
    assert!(
        diff.contains("B makes no registered calls where A makes 1 (2.0 GiB live at peak)"),
        "{diff}"
    );
    assert!(!diff.contains("makes no device calls"), "{diff}");
    let diff_json = json_of(&["diff", a_s, b_s, "--format", "json"], 0);
    let registered = diff_json["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["platform"] == "cuda" && r["api"] == "registered")
        .unwrap_or_else(|| panic!("no cuda registered row in {diff_json}"));
    assert_eq!(registered["calls"], serde_json::json!([1, 0]));

    let md = tmp.path().join("r.md");
    stdout_of(&["report", a_s, b_s, "-o", md.to_str().unwrap()], 0);
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains("Top calls (API-level trace)"), "{report}");
    assert!(
        report.contains("| cuda registered | host | 1 | 2.0 GiB |"),
        "{report}"
    );
    assert!(report.contains("B makes no cuda registered calls where A makes 1"));

    let html = tmp.path().join("p.html");
    stdout_of(&["plot", a_s, b_s, "-o", html.to_str().unwrap()], 0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("By call (API-level trace)"));
    for api in ["cuda device", "cuda host_pinned", "cuda registered"] {
        assert!(
            page.contains(&format!("<figcaption>{api}</figcaption>")),
            "{api}"
        );
    }
}
