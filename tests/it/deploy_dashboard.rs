//! deploy/grafana-dashboard.json imports as Grafana's "Import dashboard" reads it: a JSON
//! document whose every `${DS_…}` datasource reference is declared in `__inputs` (else Grafana
//! has nothing to ask for and the panels point at a datasource that does not exist), and whose
//! every query names metrics that exist: the exporter's families, as a live `serve` writes them,
//! or the records of deploy/recording-rules.yml.

use crate::common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;

fn deploy(file: &str) -> String {
    read(&common::deploy().join(file))
}

/// `${DS_X}` → `DS_X`.
fn input_ref(s: &str) -> Option<&str> {
    s.strip_prefix("${")?.strip_suffix('}')
}

/// Every datasource reference in the document, wherever it is (panels, targets, templating).
fn datasource_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "datasource" {
                    match v {
                        Value::String(s) => out.push(s.clone()),
                        Value::Object(o) => out.push(o["uid"].as_str().unwrap_or("").to_string()),
                        other => out.push(other.to_string()),
                    }
                }
                datasource_refs(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| datasource_refs(v, out)),
        _ => {}
    }
}

/// Metric names in a PromQL expression or label_values() query (gpuledger's own: names that
/// start with `gpuledger_` or hold `:gpuledger_`, as recording rules are named).
fn metric_names(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| w.starts_with("gpuledger_") || w.contains(":gpuledger_"))
        .map(String::from)
        .collect()
}

/// Sample names a live exporter writes on the seed-2622 capture (findings, driver-held memory,
/// host-class GPU memory all present).
fn exported_names() -> BTreeSet<String> {
    let s = serve_root(&fixture("seed-2622"), &["--interval", "1s"]);
    let text = s.get("/metrics");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(String::from)
        .collect()
}

#[test]
fn the_dashboard_imports_with_its_datasource_input_and_known_metrics() {
    let dash: Value = serde_json::from_str(&deploy("grafana-dashboard.json")).unwrap();
    let inputs: BTreeSet<&str> = dash["__inputs"]
        .as_array()
        .expect("__inputs: Grafana asks for each datasource the dashboard needs")
        .iter()
        .filter(|i| i["type"] == "datasource" && i["pluginId"] == "prometheus")
        .filter_map(|i| i["name"].as_str())
        .collect();
    assert!(inputs.contains("DS_PROMETHEUS"), "{inputs:?}");
    let mut refs = Vec::new();
    datasource_refs(&dash, &mut refs);
    assert!(!refs.is_empty());
    for r in &refs {
        let name = input_ref(r).unwrap_or_else(|| panic!("datasource {r:?} is no ${{input}}"));
        assert!(inputs.contains(name), "datasource {r} is not in __inputs");
    }
    let panels = dash["panels"].as_array().unwrap();
    let ids: BTreeSet<u64> = panels.iter().filter_map(|p| p["id"].as_u64()).collect();
    assert_eq!(ids.len(), panels.len(), "every panel has its own id");
    // Import lists what the dashboard needs from `__requires`: every panel type among them.
    let required: BTreeSet<&str> = dash["__requires"]
        .as_array()
        .expect("__requires")
        .iter()
        .filter(|r| r["type"] == "panel")
        .filter_map(|r| r["id"].as_str())
        .collect();
    for p in panels {
        let title = &p["title"];
        assert!(
            p["datasource"].is_object(),
            "panel {title} has no datasource"
        );
        let kind = p["type"].as_str().unwrap();
        assert!(
            required.contains(kind),
            "panel type {kind} is not in __requires"
        );
    }

    let mut known = exported_names();
    known.extend(
        deploy("recording-rules.yml")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- record: "))
            .map(|n| n.trim().to_string()),
    );
    let queries = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .chain(
            dash["templating"]["list"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["query"].as_str().unwrap().to_string()),
        );
    let mut checked = 0;
    for q in queries {
        let names = metric_names(&q);
        assert!(!names.is_empty(), "query names no gpuledger metric: {q}");
        for n in names {
            assert!(
                known.contains(&n),
                "{q} uses {n}, which nothing exports; known: {known:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked}");
}

#[test]
fn alert_and_rule_queries_name_exported_metrics() {
    let mut known = exported_names();
    let rules = deploy("recording-rules.yml");
    known.extend(
        rules
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- record: "))
            .map(|n| n.trim().to_string()),
    );
    let alerts = deploy("alerts.yml");
    for n in metric_names(&alerts)
        .into_iter()
        .chain(metric_names(&rules))
    {
        assert!(
            known.contains(&n),
            "deploy rules use {n}, which nothing exports"
        );
    }
    // No alert on findings fires on severity="info" (expected driver-held memory on an APU).
    for line in alerts
        .lines()
        .filter(|l| l.contains("gpuledger_finding_bytes{"))
    {
        assert!(line.contains("severity!=\"info\""), "{line}");
    }
}

/// A Markdown heading's anchor as GitHub and most renderers make it: lower case, spaces as `-`,
/// other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn every_alert_has_a_runbook_url_into_the_docs() {
    let alerts = deploy("alerts.yml");
    let names: Vec<&str> = alerts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    let urls: Vec<&str> = alerts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("runbook_url: "))
        .map(|u| u.trim_matches('"'))
        .collect();
    assert_eq!(
        names.len(),
        urls.len(),
        "one runbook_url per alert: {urls:?}"
    );
    for (name, url) in names.iter().zip(&urls) {
        let (file, fragment) = url.split_once('#').unwrap_or_else(|| panic!("{url}"));
        let doc = read(&repo_path(file));
        let anchors: Vec<String> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("## "))
            .map(anchor)
            .collect();
        assert_eq!(fragment, anchor(name), "{name}: {url}");
        assert!(
            anchors.iter().any(|a| a == fragment),
            "{url}: no such section in {file}"
        );
    }
}
