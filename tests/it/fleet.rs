//! Fleet monitoring: a real Prometheus over two exporters (two simulated nodes) with the alert and
//! recording rules from deploy/, and the Grafana dashboard's job/node view.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Prometheus; killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(bin: &Path, config: &Path, data: &Path) -> Prometheus {
        let port = free_port();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Prometheus { child, port }
    }

    /// `data` of an HTTP API answer, or None while Prometheus is not up yet.
    fn api(&self, path: &str, query: Option<&str>) -> Option<Value> {
        let mut req = ureq::get(&format!("http://127.0.0.1:{}/api/v1/{path}", self.port));
        if let Some(q) = query {
            req = req.query("query", q);
        }
        let v: Value = serde_json::from_str(&req.call().ok()?.into_string().ok()?).ok()?;
        Some(v["data"].clone())
    }
}

/// `simulate ddp-peer-mirror --backing BACKING` into DIR/NAME, every rank in Slurm job 77.
fn node_tree(dir: &Path, name: &str, backing: &str) -> PathBuf {
    let tree = dir.join(name);
    let out = bin()
        .args(["simulate", "ddp-peer-mirror", "--backing", backing, "--out"])
        .arg(&tree)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut ranks = 0;
    for entry in std::fs::read_dir(tree.join("proc")).unwrap() {
        let environ = entry.unwrap().path().join("environ");
        if let Ok(mut env) = std::fs::read(&environ) {
            env.extend_from_slice(b"SLURM_JOB_ID=77\0");
            std::fs::write(&environ, env).unwrap();
            ranks += 1;
        }
    }
    assert!(ranks >= 2, "{ranks} processes in {}", tree.display());
    tree
}

/// deploy/alerts.yml with every `for:` cut to 2s, so that an alert fires within the test.
fn fast_alerts() -> String {
    let text = read(&deploy().join("alerts.yml"));
    let mut cut = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix("for: ") {
            Some(_) => {
                cut += 1;
                format!("{}for: 2s", &l[..l.len() - l.trim_start().len()])
            }
            None => l.to_string(),
        })
        .collect();
    assert_eq!(
        cut,
        text.matches("- alert: ").count(),
        "one `for:` per alert"
    );
    lines.join("\n") + "\n"
}

/// Sum of `gpuledger_finding_bytes` for pinned peer mirrors in an exporter's answer.
fn pinned_mirror_bytes(text: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.starts_with("gpuledger_finding_bytes{")
                && l.contains("kind=\"peer_mirror\"")
                && l.contains("backing=\"pinned\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

fn metrics(s: &Server) -> String {
    s.get("/metrics")
}

/// A Prometheus config scraping `a` and `b`, each target labelled `node` = a, b when `nodes`
/// (as the ServiceMonitor does), or plain static targets as a scrape config without relabelling
/// has them.
fn fleet_config(dir: &Path, a: &Server, b: &Server, nodes: bool) -> PathBuf {
    let alerts = dir.join("alerts.yml");
    std::fs::write(&alerts, fast_alerts()).unwrap();
    let target = |s: &Server| s.base.trim_start_matches("http://").to_string();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files: [\"{}\", \"{}\"]\n\
             scrape_configs:\n  - job_name: gpuledger\n    static_configs:\n\
             \x20     - targets: [\"{}\"]\n{}\
             \x20     - targets: [\"{}\"]\n{}",
            alerts.display(),
            deploy().join("recording-rules.yml").display(),
            target(a),
            if nodes {
                "        labels: {node: a}\n"
            } else {
                ""
            },
            target(b),
            if nodes {
                "        labels: {node: b}\n"
            } else {
                ""
            },
        ),
    )
    .unwrap();
    config
}

/// Active (pending or firing) alerts named `name`.
fn active(alerts: &Value, name: &str) -> Vec<Value> {
    alerts["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["labels"]["alertname"] == name)
        .cloned()
        .collect()
}

#[test]
fn peer_mirror_alert_fires_for_the_node_with_the_pattern_only() {
    let Some(prom) = prometheus() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let a = serve_root(
        &node_tree(tmp.path(), "a", "pinned"),
        &["--interval", "250ms"],
    );
    let b = serve_root(
        &node_tree(tmp.path(), "b", "registered-only"),
        &["--interval", "250ms"],
    );
    let pinned = pinned_mirror_bytes(&metrics(&a));
    let text_b = metrics(&b);
    assert!(pinned > 0.0, "node a serves pinned peer mirrors");
    assert!(
        text_b.contains("kind=\"peer_mirror\"") && pinned_mirror_bytes(&text_b) == 0.0,
        "node b mirrors without pinning:\n{text_b}"
    );
    let config = fleet_config(tmp.path(), &a, &b, true);
    let p = Prometheus::start(&prom, &config, &tmp.path().join("data"));
    let rule = "exported_job:gpuledger_peer_mirror_pinned_bytes:sum";
    let deadline = Instant::now() + Duration::from_secs(45);
    let (alerts, recorded) = loop {
        assert!(
            Instant::now() < deadline,
            "no firing alert and recorded sum within 45 s"
        );
        std::thread::sleep(Duration::from_millis(500));
        let (Some(alerts), Some(recorded)) = (p.api("alerts", None), p.api("query", Some(rule)))
        else {
            continue;
        };
        let mirror = active(&alerts, "GpuPeerMirrorPinned");
        if mirror.iter().filter(|a| a["state"] == "firing").count() >= 2 {
            break (alerts, recorded);
        }
    };
    let mirror = active(&alerts, "GpuPeerMirrorPinned");
    let mut ranks: Vec<&str> = mirror
        .iter()
        .map(|a| a["labels"]["rank"].as_str().unwrap())
        .collect();
    ranks.sort_unstable();
    assert_eq!(ranks, ["0", "1"], "{mirror:#?}");
    assert!(
        mirror.iter().all(|a| a["labels"]["node"] == "a"),
        "the alert names node a only: {mirror:#?}"
    );
    let up = p.api("query", Some("sum(up)")).unwrap();
    assert_eq!(up["result"][0]["value"][1], "2", "both nodes scraped: {up}");
    let result = recorded["result"].as_array().unwrap();
    assert_eq!(result.len(), 1, "{recorded}");
    assert_eq!(result[0]["metric"]["exported_job"], "77", "{recorded}");
    let sum: f64 = result[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert_eq!(
        sum, pinned,
        "job 77's pinned peer-mirror bytes over both nodes"
    );
}

#[test]
fn dashboard_has_a_job_and_node_view() {
    let d: Value = serde_json::from_str(&read(&deploy().join("grafana-dashboard.json"))).unwrap();
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(vars.contains(&"job") && vars.contains(&"node"), "{vars:?}");
    let panels = d["panels"].as_array().unwrap();
    let mut ids: Vec<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
    let exprs: Vec<&str> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    for e in &exprs {
        for used in e.split('$').skip(1) {
            let name: String = used
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            assert!(
                vars.contains(&name.as_str()),
                "${name} in {e} is no variable"
            );
        }
    }
    assert!(
        exprs
            .iter()
            .any(|e| e.starts_with("sum by (node, instance)")),
        "a per-node panel (per instance where no node label is added)"
    );
    let rule = "exported_job:gpuledger_peer_mirror_pinned_bytes:sum";
    assert!(exprs.iter().any(|e| e.starts_with(rule)));
    assert!(read(&deploy().join("recording-rules.yml")).contains(&format!("record: {rule}")));
}

/// Every dashboard query, its variables at "All" (`.*`, as the dashboard's allValue).
fn dashboard_queries() -> Vec<(String, String)> {
    let d: Value = serde_json::from_str(&read(&deploy().join("grafana-dashboard.json"))).unwrap();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let mut q = t["expr"].as_str().unwrap().to_string();
            for var in ["$node", "$instance", "$job"] {
                q = q.replace(var, ".*");
            }
            out.push((p["title"].as_str().unwrap().to_string(), q));
        }
    }
    out
}

#[test]
fn every_dashboard_panel_has_data_without_a_node_label() {
    let Some(prom) = prometheus() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let a = serve_root(
        &node_tree(tmp.path(), "a", "pinned"),
        &["--interval", "250ms"],
    );
    let b = serve_root(
        &node_tree(tmp.path(), "b", "registered-only"),
        &["--interval", "250ms", "--series", "per-job"],
    );
    let config = fleet_config(tmp.path(), &a, &b, false);
    let p = Prometheus::start(&prom, &config, &tmp.path().join("data"));
    let queries = dashboard_queries();
    assert!(queries.len() >= 8, "{queries:?}");
    let deadline = Instant::now() + Duration::from_secs(45);
    let mut empty = queries.clone();
    while !empty.is_empty() {
        assert!(
            Instant::now() < deadline,
            "panels without data after 45 s with no node label: {empty:#?}"
        );
        std::thread::sleep(Duration::from_millis(500));
        empty.retain(|(_, q)| {
            let result = p.api("query", Some(q)).map(|d| d["result"].clone());
            result.is_none_or(|r| r.as_array().is_none_or(|r| r.is_empty()))
        });
    }
    // The per-node panels tell the two nodes apart (by instance, with no node label).
    for (title, q) in queries
        .iter()
        .filter(|(_, q)| q.starts_with("sum by (node"))
    {
        let r = p.api("query", Some(q)).unwrap();
        let instances: std::collections::BTreeSet<&str> = r["result"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["metric"]["instance"].as_str())
            .collect();
        assert_eq!(instances.len(), 2, "{title}: {q}\n{r}");
    }
}
