//! `/metrics` as the Prometheus ecosystem reads it (issue 35 item 5): the classic text format
//! 0.0.4 unless the request's `Accept` asks for OpenMetrics, both holding the same samples, and
//! the classic text clean under `promtool check metrics` (its lints included).

use crate::common;
use common::*;
use std::io::Write;
use std::process::{Command, Stdio};

/// The sample lines of an exposition, without the series whose values move from sample to
/// sample (time, the exporter's own scan figures).
fn samples(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            !l.starts_with("gpuledger_sample_timestamp") && !l.starts_with("gpuledger_scan_")
        })
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn metrics_are_classic_text_unless_openmetrics_is_asked_for() {
    let s = serve_root(&fixture("seed-2622"), &["--interval", "1s"]);
    let (classic_type, classic) = s.get_as("/metrics", None);
    assert_eq!(classic_type, "text/plain; version=0.0.4; charset=utf-8");
    for accept in [
        "*/*",
        "text/plain",
        "text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5",
    ] {
        let (t, _) = s.get_as("/metrics", Some(accept));
        assert_eq!(t, classic_type, "Accept: {accept}");
    }
    assert!(
        !classic.contains("# EOF") && !classic.contains("# UNIT"),
        "{classic}"
    );
    assert!(!classic.contains("_created"), "{classic}");
    for line in [
        "# HELP gpuledger_scan_errors_total Scan problems since the exporter started",
        "# TYPE gpuledger_scan_errors_total counter",
        "# TYPE gpuledger_findings gauge",
    ] {
        assert!(
            classic.lines().any(|l| l.starts_with(line)),
            "no {line:?} in\n{classic}"
        );
    }

    let (om_type, om) = s.get_as("/metrics", Some(PROMETHEUS_ACCEPT));
    assert_eq!(
        om_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(
        om.lines()
            .any(|l| l == "# TYPE gpuledger_scan_errors counter"),
        "{om}"
    );
    assert_eq!(
        samples(&classic),
        samples(&om),
        "the same samples in both formats"
    );
}

/// `promtool check metrics` on `text`: its exit status and what it said.
fn promtool_check(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[test]
fn promtool_check_metrics_is_clean_in_both_series_modes() {
    if prometheus().is_none() {
        return;
    }
    for (fixture_name, extra) in [
        ("seed-2622", &[][..]),
        ("k8s-slurm-dmem", &["--min-process-bytes", "1MiB"][..]),
        ("k8s-slurm-dmem", &["--series", "per-job"][..]),
    ] {
        let s = serve_root(&fixture(fixture_name), extra);
        let (ok, said) = promtool_check(&s.get("/metrics"));
        assert!(
            ok && said.trim().is_empty(),
            "{fixture_name} {extra:?}: {said}"
        );
    }
    // The check can fail: the OpenMetrics text names a counter's family without `_total`.
    let s = serve_root(&fixture("seed-2622"), &[]);
    let (ok, said) = promtool_check(&s.openmetrics());
    assert!(!ok && said.contains("no help text"), "{said}");
}
