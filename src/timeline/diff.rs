//! `diff`: the seed's bad-vs-good table, computed from two recordings.

use super::calls::{diff_calls, CallDiffRow};
use super::evidence::RateChange;
use super::{PeerHost, Registrations, RunSummary};
use crate::recording::RecordedFinding;
use crate::units::human_bytes;
use serde::Serialize;

pub use super::diff_row::{change, RateValue, Row, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// Rows.
    pub rows: Vec<Row>,
    /// What each run's peer-device registrations were.
    pub registrations: [Registrations; 2],
    /// Each run's peer_mirror findings, as recorded (severity at the peak).
    pub peer_mirrors: [Vec<RecordedFinding>; 2],
    /// Set when A and B ran different jobs: the table is still worth reading, a verdict is not.
    pub warning: Option<String>,
    /// One line naming the run that shows the peer-mirror pinning and by how much; `None` when
    /// the runs are not comparable.
    pub verdict: Option<String>,
    /// Per throughput series: whether the medians differ by more than the tolerance.
    pub throughput: Vec<(String, RateChange)>,
    /// The traced calls of A against B, per API kind (empty when neither run was traced).
    pub calls: Vec<CallDiffRow>,
}

/// The words of a recorded command that name the job. The simulator's `--backing VALUE` is the
/// configuration under test (like an environment variable of a real run), not another job.
fn job_words(s: &RunSummary) -> Vec<String> {
    let words: Vec<String> = s
        .command
        .iter()
        .flat_map(|c| c.split_whitespace())
        .map(str::to_owned)
        .collect();
    if words.first().map(String::as_str) != Some("simulate") {
        return words;
    }
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        if w == "--backing" {
            it.next();
        } else if !w.starts_with("--backing=") {
            out.push(w);
        }
    }
    out
}

/// Why A and B are not the same job, if they are not.
fn different_jobs(a: &RunSummary, b: &RunSummary) -> Option<String> {
    let (ra, rb) = (a.rank_count(), b.rank_count());
    if ra != rb {
        return Some(format!(
            "warning: A and B ran different jobs ({ra} ranks vs {rb}): compare the table, there is no verdict"
        ));
    }
    let (ja, jb) = (job_words(a), job_words(b));
    (ja != jb).then(|| {
        format!(
            "warning: A and B ran different jobs (`{}` vs `{}`): compare the table, there is no verdict",
            ja.join(" "),
            jb.join(" ")
        )
    })
}

/// Compares run A with run B.
pub fn diff(a: &RunSummary, b: &RunSummary) -> Diff {
    let mut rows = peer_rows(a, b);
    rows.extend(host_rows(a, b));
    rows.extend(super::evidence_rows::rows(a, b));
    rows.extend(context_rows(a, b));
    let warning = different_jobs(a, b);
    let verdict = match warning {
        Some(_) => None,
        None => Some(verdict(a, b)),
    };
    Diff {
        rows,
        registrations: [a.registrations(), b.registrations()],
        peer_mirrors: [
            a.peer_mirrors().cloned().collect(),
            b.peer_mirrors().cloned().collect(),
        ],
        warning,
        verdict,
        throughput: super::evidence_rows::changes(a, b),
        calls: diff_calls(a.calls.as_ref(), b.calls.as_ref()),
    }
}

fn peer_rows(a: &RunSummary, b: &RunSummary) -> Vec<Row> {
    let ranks: BTreeSet<u32> = a
        .peer_host
        .iter()
        .chain(&b.peer_host)
        .filter_map(|p| p.rank)
        .collect();
    fn get(s: &RunSummary, rank: u32) -> Option<&PeerHost> {
        s.peer_host.iter().find(|p| p.rank == Some(rank))
    }
    let mut rows: Vec<Row> = ranks
        .iter()
        .map(|rank| Row {
            what: format!("peer-fd host-class resident, rank {rank}"),
            a: Value::Bytes(get(a, *rank).map(|p| p.bytes)),
            b: Value::Bytes(get(b, *rank).map(|p| p.bytes)),
        })
        .collect();
    if ranks.is_empty() {
        rows.push(Row {
            what: "peer-fd host-class resident, all processes".into(),
            a: Value::Bytes(Some(a.peer_host_total())),
            b: Value::Bytes(Some(b.peer_host_total())),
        });
    }
    rows
}

fn host_rows(a: &RunSummary, b: &RunSummary) -> Vec<Row> {
    let counter = |s: &RunSummary| {
        s.driver_held_peak
            .map_or("no host counter", |d| d.counter.as_str())
    };
    let (ca, cb) = (counter(a), counter(b));
    let source = if ca == cb {
        ca.to_string()
    } else {
        format!("{ca} / {cb}")
    };
    let mut rows = vec![Row {
        what: format!("driver-held host memory, peak ({source})"),
        a: Value::Bytes(a.driver_held_bytes()),
        b: Value::Bytes(b.driver_held_bytes()),
    }];
    let pinned = |s: &RunSummary| s.driver_held_peak.map(|d| d.pinned_shmem);
    if pinned(a).unwrap_or(0) + pinned(b).unwrap_or(0) > 0 {
        rows.push(Row {
            what: "  of it pinned shmem, at the peak".into(),
            a: Value::Bytes(pinned(a)),
            b: Value::Bytes(pinned(b)),
        });
    }
    rows.push(Row {
        what: "MemAvailable, low point".into(),
        a: Value::Bytes(a.mem_available_low),
        b: Value::Bytes(b.mem_available_low),
    });
    rows.push(Row {
        what: "duration".into(),
        a: Value::Seconds(a.duration_s),
        b: Value::Seconds(b.duration_s),
    });
    rows.push(Row {
        what: "job end".into(),
        a: Value::Text(a.job_end.to_string()),
        b: Value::Text(b.job_end.to_string()),
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
    rows
}

/// Rows for one map's keys whose values differ between A and B.
fn differing(
    prefix: &str,
    x: &BTreeMap<String, String>,
    y: &BTreeMap<String, String>,
    absent: &str,
) -> Vec<Row> {
    let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
    keys.into_iter()
        .filter(|k| x.get(*k) != y.get(*k))
        .map(|k| {
            let show = |m: &BTreeMap<String, String>| {
                Value::Text(m.get(k).cloned().unwrap_or_else(|| absent.into()))
            };
            Row {
                what: format!("{prefix}{k}"),
                a: show(x),
                b: show(y),
            }
        })
        .collect()
}

/// Rows for what differs around the runs: environment, packages, kernel, gpuledger.
fn context_rows(a: &RunSummary, b: &RunSummary) -> Vec<Row> {
    let mut rows = differing("environment ", &a.env, &b.env, "unset");
    rows.extend(differing(
        "package ",
        &a.packages,
        &b.packages,
        "not installed",
    ));
    rows.extend(differing("", &a.versions, &b.versions, "not recorded"));
    rows
}

fn verdict(a: &RunSummary, b: &RunSummary) -> String {
    let held = |s: &RunSummary| {
        s.driver_held_bytes()
            .map(human_bytes)
            .unwrap_or_else(|| "unknown".into())
    };
    let peaked = format!(
        "driver-held host memory peaked at {} in A and {} in B",
        held(a),
        held(b)
    );
    let (bad, good, sbad, sgood) = match (a.registrations(), b.registrations()) {
        (Registrations::Pinned, Registrations::Pinned) => {
            return format!("both runs show the peer-mirror pinning ({peaked})")
        }
        (Registrations::Pinned, _) => ("A", "B", a, b),
        (_, Registrations::Pinned) => ("B", "A", b, a),
        _ => return format!("neither run shows pinned peer mirrors ({peaked})"),
    };
    let factor = match (sbad.driver_held_bytes(), sgood.driver_held_bytes()) {
        (Some(x), Some(y)) if y > 0 => format!(" ({:.0}×)", x as f64 / y as f64),
        _ => String::new(),
    };
    let head = format!(
        "{bad} shows the peer-mirror pinning: driver-held host memory peaked at {} vs {} in {good}{factor}",
        held(sbad),
        held(sgood)
    );
    let tail = match sgood.registrations() {
        Registrations::NotPinned => format!(
            ", with peer-fd host-class bytes {} vs {}: in {good} the registrations are bookkeeping only",
            human_bytes(sbad.peer_host_total()),
            human_bytes(sgood.peer_host_total())
        ),
        Registrations::None => format!("; {good} shows no peer-device registrations at all"),
        _ => format!("; in {good} host counters could not tell whether the registrations are pinned"),
    };
    head + &tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Backing, Finding, Kind, Severity};
    use crate::recording::Recording;
    use crate::timeline::Peak;

    fn rec(packages: &str) -> RunSummary {
        RunSummary::of(&Recording {
            meta: [
                ("packages".to_string(), packages.to_string()),
                ("exit_code".to_string(), "0".to_string()),
            ]
            .into(),
            ..Recording::default()
        })
    }

    fn mirror(backing: Backing, severity: Severity) -> RecordedFinding {
        RecordedFinding {
            peak: Finding {
                pid: Some(10),
                rank: Some(0),
                device: Some("0000:03:00.0".into()),
                peer: Some("0000:04:00.0".into()),
                bytes: 18 << 30,
                backing: Some(backing),
                ..Finding::new(Kind::PeerMirror, severity, "m".into())
            },
            worst_severity: severity,
            first: 1,
            last: 5,
        }
    }

    /// A run of `command` with `ranks` ranks and these peer_mirror backings.
    fn run(command: &str, ranks: u32, backings: &[Backing]) -> RunSummary {
        let rec = Recording {
            meta: [
                (
                    "command".to_string(),
                    serde_json::json!([command]).to_string(),
                ),
                ("exit_code".to_string(), "0".to_string()),
            ]
            .into(),
            findings: backings
                .iter()
                .map(|b| mirror(*b, Severity::Info))
                .collect(),
            ..Recording::default()
        };
        let mut s = RunSummary::of(&rec);
        s.peaks = (0..ranks)
            .map(|r| Peak {
                pid: 10 + r,
                rank: Some(r),
                device: format!("0000:0{}:00.0", 3 + r),
                device_local: 18 << 30,
                host: 0,
                home: true,
            })
            .collect();
        s
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
        let v = d.verdict.unwrap();
        assert!(v.starts_with("neither run"), "{v}");
    }

    #[test]
    fn bookkeeping_only_needs_not_pinned_registrations_in_b() {
        let sim = "simulate ddp-peer-mirror --ranks 2 --backing";
        let a = run(
            &format!("{sim} pinned"),
            2,
            &[Backing::Pinned, Backing::Pinned],
        );
        let b = run(
            &format!("{sim} registered-only"),
            2,
            &[Backing::NotPinned, Backing::NotPinned],
        );
        let d = diff(&a, &b);
        assert_eq!(
            d.warning, None,
            "the backing is the configuration, not the job"
        );
        assert_eq!(
            d.registrations,
            [Registrations::Pinned, Registrations::NotPinned]
        );
        let v = d.verdict.unwrap();
        assert!(v.starts_with("A shows the peer-mirror pinning"), "{v}");
        assert!(
            v.ends_with("in B the registrations are bookkeeping only"),
            "{v}"
        );
        let swapped = diff(&b, &a).verdict.unwrap();
        assert!(
            swapped.starts_with("B shows")
                && swapped.ends_with("in A the registrations are bookkeeping only"),
            "{swapped}"
        );
    }

    #[test]
    fn no_registrations_in_b_is_not_bookkeeping() {
        let a = run("python3 train.py", 2, &[Backing::Pinned]);
        let b = run("python3 train.py", 2, &[]);
        let d = diff(&a, &b);
        assert_eq!(d.registrations[1], Registrations::None);
        let v = d.verdict.unwrap();
        assert!(
            v.contains("B shows no peer-device registrations at all"),
            "{v}"
        );
        assert!(!v.contains("bookkeeping"), "{v}");
    }

    #[test]
    fn unknown_backing_in_b_is_not_bookkeeping() {
        let a = run("python3 train.py", 2, &[Backing::Pinned]);
        let b = run(
            "python3 train.py",
            2,
            &[Backing::NotPinned, Backing::Unknown],
        );
        let v = diff(&a, &b).verdict.unwrap();
        assert!(
            v.contains("could not tell whether the registrations are pinned"),
            "{v}"
        );
        assert!(!v.contains("bookkeeping"), "{v}");
    }

    #[test]
    fn different_jobs_get_a_warning_and_no_verdict() {
        let a = run("python3 train.py", 2, &[Backing::Pinned]);
        for b in [
            run("python3 eval.py", 2, &[Backing::NotPinned]),
            run("python3 train.py", 4, &[Backing::NotPinned]),
            run("simulate other-scenario --ranks 2 --backing pinned", 2, &[]),
        ] {
            let d = diff(&a, &b);
            let w = d.warning.clone().unwrap();
            assert!(w.contains("ran different jobs"), "{w}");
            assert_eq!(d.verdict, None);
            assert!(!d.rows.is_empty(), "the table is still there");
        }
    }
}
