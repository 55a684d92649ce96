//! `diff`: the seed's bad-vs-good table, computed from two recordings.

use super::peer_host_by_process;
use crate::outputs::text_table::{render, Align};
use crate::recording::Recording;
use crate::units::human_bytes;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One value of a diff row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// Bytes (null when unknown).
    Bytes(Option<u64>),
    /// Seconds.
    Seconds(f64),
    /// Free text.
    Text(String),
}

impl Value {
    fn show(&self) -> String {
        match self {
            Value::Bytes(b) => b.map(human_bytes).unwrap_or_else(|| "not recorded".into()),
            Value::Seconds(s) => format!("{s:.1} s"),
            Value::Text(t) => t.clone(),
        }
    }
}

/// One row: what, A, B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// What is compared.
    pub what: String,
    /// Run A.
    pub a: Value,
    /// Run B.
    pub b: Value,
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// Rows.
    pub rows: Vec<Row>,
    /// One line naming the run that shows the peer-mirror pinning, and by how much.
    pub verdict: String,
}

fn driver_held_peak(r: &Recording) -> (Option<u64>, &'static str) {
    match r.host.gpu_active_peak {
        Some(v) => (Some(v), "GPUActive"),
        None => (r.host.unaccounted_peak, "unaccounted"),
    }
}

fn exit_text(r: &Recording) -> String {
    match (r.meta.get("exit_code"), r.meta.get("signal")) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "not recorded".into(),
    }
}

fn env_of(r: &Recording) -> BTreeMap<String, String> {
    r.processes
        .iter()
        .find(|p| !p.env.is_empty())
        .map(|p| p.env.clone())
        .unwrap_or_default()
}

fn pinned_mirror(r: &Recording) -> bool {
    r.findings
        .iter()
        .any(|f| f.kind == "peer_mirror" && f.backing.as_deref() == Some("pinned"))
}

/// Compares run A with run B.
pub fn diff(a: &Recording, b: &Recording) -> Diff {
    let mut rows = Vec::new();
    let (pa, pb) = (peer_host_by_process(a), peer_host_by_process(b));
    let ranks: BTreeSet<Option<u32>> = pa
        .iter()
        .chain(&pb)
        .map(|(_, r, _)| *r)
        .filter(Option::is_some)
        .collect();
    let peer_total = |v: &[(u32, Option<u32>, u64)]| v.iter().map(|x| x.2).sum::<u64>();
    for rank in &ranks {
        let get = |v: &[(u32, Option<u32>, u64)]| v.iter().find(|x| x.1 == *rank).map(|x| x.2);
        rows.push(Row {
            what: format!("peer-fd host-class resident, rank {}", rank.unwrap_or(0)),
            a: Value::Bytes(get(&pa)),
            b: Value::Bytes(get(&pb)),
        });
    }
    if ranks.is_empty() {
        rows.push(Row {
            what: "peer-fd host-class resident, all processes".into(),
            a: Value::Bytes(Some(peer_total(&pa))),
            b: Value::Bytes(Some(peer_total(&pb))),
        });
    }
    let (ha, sa) = driver_held_peak(a);
    let (hb, sb) = driver_held_peak(b);
    let source = if sa == sb {
        sa.to_string()
    } else {
        format!("{sa} / {sb}")
    };
    rows.push(Row {
        what: format!("driver-held host memory, peak ({source})"),
        a: Value::Bytes(ha),
        b: Value::Bytes(hb),
    });
    let low = |r: &Recording| r.host.mem_available_low;
    rows.push(Row {
        what: "MemAvailable, low point".into(),
        a: Value::Bytes(low(a)),
        b: Value::Bytes(low(b)),
    });
    rows.push(Row {
        what: "duration".into(),
        a: Value::Seconds(a.duration_s()),
        b: Value::Seconds(b.duration_s()),
    });
    rows.push(Row {
        what: "job end".into(),
        a: Value::Text(exit_text(a)),
        b: Value::Text(exit_text(b)),
    });
    for (kind, what) in [
        (
            "page_allocation_failure",
            "kernel: page-allocation failures",
        ),
        ("oom_kill", "kernel: OOM-killer lines"),
        ("driver", "kernel: GPU driver lines"),
    ] {
        let (x, y) = (a.kernel_count(kind), b.kernel_count(kind));
        if x + y > 0 {
            rows.push(Row {
                what: what.into(),
                a: Value::Text(x.to_string()),
                b: Value::Text(y.to_string()),
            });
        }
    }
    let (ea, eb) = (env_of(a), env_of(b));
    let keys: BTreeSet<&String> = ea.keys().chain(eb.keys()).collect();
    for k in keys.into_iter().filter(|k| ea.get(*k) != eb.get(*k)) {
        let show = |e: &BTreeMap<String, String>| {
            Value::Text(e.get(k).cloned().unwrap_or_else(|| "unset".into()))
        };
        rows.push(Row {
            what: format!("environment {k}"),
            a: show(&ea),
            b: show(&eb),
        });
    }
    let packages = |r: &Recording| -> BTreeMap<String, String> {
        r.meta
            .get("packages")
            .and_then(|p| serde_json::from_str(p).ok())
            .unwrap_or_default()
    };
    let (ka, kb) = (packages(a), packages(b));
    let names: BTreeSet<&String> = ka.keys().chain(kb.keys()).collect();
    for n in names.into_iter().filter(|n| ka.get(*n) != kb.get(*n)) {
        let show = |p: &BTreeMap<String, String>| {
            Value::Text(p.get(n).cloned().unwrap_or_else(|| "not installed".into()))
        };
        rows.push(Row {
            what: format!("package {n}"),
            a: show(&ka),
            b: show(&kb),
        });
    }
    for key in ["kernel", "gpuledger_version"] {
        let (x, y) = (a.meta.get(key), b.meta.get(key));
        if x != y {
            let t = |v: Option<&String>| {
                Value::Text(v.cloned().unwrap_or_else(|| "not recorded".into()))
            };
            rows.push(Row {
                what: key.replace('_', " "),
                a: t(x),
                b: t(y),
            });
        }
    }
    let verdict = verdict(
        pinned_mirror(a),
        pinned_mirror(b),
        ha,
        hb,
        peer_total(&pa),
        peer_total(&pb),
    );
    Diff { rows, verdict }
}

fn verdict(
    pin_a: bool,
    pin_b: bool,
    ha: Option<u64>,
    hb: Option<u64>,
    peer_a: u64,
    peer_b: u64,
) -> String {
    let held = |h: Option<u64>| h.map(human_bytes).unwrap_or_else(|| "unknown".into());
    let (bad, good, hbad, hgood, pbad, pgood) = match (pin_a, pin_b) {
        (true, false) => ("A", "B", ha, hb, peer_a, peer_b),
        (false, true) => ("B", "A", hb, ha, peer_b, peer_a),
        (true, true) => return format!(
            "both runs show the peer-mirror pinning (driver-held host memory peaked at {} in A and {} in B)",
            held(ha),
            held(hb)
        ),
        (false, false) => return format!(
            "neither run shows pinned peer mirrors (driver-held host memory peaked at {} in A and {} in B)",
            held(ha),
            held(hb)
        ),
    };
    let factor = match (hbad, hgood) {
        (Some(x), Some(y)) if y > 0 => format!(" ({:.0}×)", x as f64 / y as f64),
        _ => String::new(),
    };
    format!(
        "{bad} shows the peer-mirror pinning: driver-held host memory peaked at {} vs {} in {good}{factor}, with peer-fd host-class bytes {} vs {}: in {good} the registrations are bookkeeping only",
        held(hbad),
        held(hgood),
        human_bytes(pbad),
        human_bytes(pgood)
    )
}

/// Renders the table and the verdict.
pub fn render_diff(d: &Diff, a_name: &str, b_name: &str) -> String {
    let rows: Vec<Vec<String>> = d
        .rows
        .iter()
        .map(|r| {
            let change = match (&r.a, &r.b) {
                (Value::Bytes(Some(x)), Value::Bytes(Some(y))) => {
                    let delta = *y as i128 - *x as i128;
                    let sign = if delta < 0 { "-" } else { "+" };
                    format!("{sign}{}", human_bytes(delta.unsigned_abs() as u64))
                }
                (Value::Seconds(x), Value::Seconds(y)) => format!("{:+.1} s", y - x),
                (x, y) if x == y => "same".into(),
                _ => "differs".into(),
            };
            vec![r.what.clone(), r.a.show(), r.b.show(), change]
        })
        .collect();
    let headers = [
        ("", Align::Left),
        ("A", Align::Right),
        ("B", Align::Right),
        ("B - A", Align::Right),
    ];
    format!(
        "A = {a_name}\nB = {b_name}\n\n{}\n{}\n",
        render("  ", &headers, &rows),
        d.verdict
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(packages: &str) -> Recording {
        Recording {
            meta: [
                ("packages".to_string(), packages.to_string()),
                ("exit_code".to_string(), "0".to_string()),
            ]
            .into(),
            ..Recording::default()
        }
    }

    #[test]
    fn runtime_versions_each_run_saw() {
        let a = rec(r#"{"intel-opencl-icd":"26.22.38646.4","libigc2":"2.36.3"}"#);
        let b = rec(r#"{"intel-opencl-icd":"26.05.37020.3","libigc2":"2.36.3"}"#);
        let d = diff(&a, &b);
        let row = d
            .rows
            .iter()
            .find(|r| r.what == "package intel-opencl-icd")
            .unwrap();
        assert_eq!(
            (&row.a, &row.b),
            (
                &Value::Text("26.22.38646.4".into()),
                &Value::Text("26.05.37020.3".into())
            )
        );
        assert!(
            d.rows.iter().all(|r| r.what != "package libigc2"),
            "identical versions are not rows"
        );
        assert!(d.verdict.starts_with("neither run"), "{}", d.verdict);
    }
}
