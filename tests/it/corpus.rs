//! The corpus of real third-party jobs recorded on an NVIDIA H100 (`tests/fixtures/recordings/`,
//! made by `tests/gpu/recorded_jobs.sh`, issue 34): each recording's findings against the ones
//! written by hand from its series in its README, and nothing else; its report names the job's
//! frameworks where they were recorded and never tells a maintainer to re-inject our tracer.

use crate::common;
use common::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One expected finding: kind, severity, bytes (within `tolerance`), time of the finding (s).
struct Expect {
    kind: &'static str,
    severity: &'static str,
    bytes: u64,
    t_s: f64,
}

const fn f(kind: &'static str, severity: &'static str, bytes: u64, t_s: f64) -> Expect {
    Expect {
        kind,
        severity,
        bytes,
        t_s,
    }
}

/// Each recording, its job's exit code and its findings (written from the series, see README).
fn corpus() -> Vec<(&'static str, i64, Vec<Expect>)> {
    vec![
        (
            "jax-prealloc",
            0,
            vec![
                f("plateau", "info", 61_440 * MIB, 3.6),
                f("released_on_exit", "info", (61_440 - 630) * MIB, 8.85),
            ],
        ),
        ("jax-grow", 0, vec![f("plateau", "info", 2_936 * MIB, 3.0)]),
        (
            "timm-pinned-loader",
            0,
            vec![f("plateau", "info", 7_462 * MIB, 12.16)],
        ),
        (
            "cupy-pinned-register",
            0,
            vec![
                f("plateau", "info", GIB, 1.95),
                f("plateau", "info", 4_626 * MIB, 1.95),
            ],
        ),
        (
            "torch-expandable",
            0,
            vec![f("stepwise_growth", "info", 2_040 * MIB, 4.5)],
        ),
        (
            "torch-oom",
            1,
            vec![
                f("stepwise_growth", "info", 16 * GIB, 5.4),
                f("plateau", "info", 66_066 * MIB, 6.0),
                f("device_oom", "critical", 16 * GIB, 6.34),
            ],
        ),
        ("sigkill-midrun", 137, vec![]),
        (
            "bert-inference",
            0,
            vec![f("plateau", "info", 1_366 * MIB, 13.5)],
        ),
        ("lightning-fit", 0, vec![]),
    ]
}

fn ledger(name: &str) -> String {
    repo_path(&format!("tests/fixtures/recordings/{name}/job.ledger"))
        .display()
        .to_string()
}

/// Whether `bytes` is `want` to within the MiB the README's series are written in.
fn near(bytes: u64, want: u64) -> bool {
    bytes.abs_diff(want) < MIB
}

#[test]
fn every_recording_has_the_hand_written_findings_and_no_other() {
    for (name, code, expected) in corpus() {
        let doc = json_of(&["show", &ledger(name), "--json"], 0);
        assert_eq!(doc["exit_code"], code, "{name}");
        let found = doc["findings"].as_array().expect("findings");
        assert_eq!(found.len(), expected.len(), "{name}: {found:#?}");
        for e in &expected {
            let hit = found.iter().any(|x| {
                x["kind"] == e.kind
                    && x["severity"] == e.severity
                    && near(x["bytes"].as_u64().unwrap_or(0), e.bytes)
                    && (x["t_s"].as_f64().unwrap_or(-1.0) - e.t_s).abs() < 0.1
            });
            assert!(
                hit,
                "{name}: no {} {} of {} B at {} s in {found:#?}",
                e.severity, e.kind, e.bytes, e.t_s
            );
        }
    }
}

#[test]
fn a_level_left_after_a_peak_is_no_plateau() {
    // Lightning's process peaks at 1.5 GiB for 4 samples, then holds 756 MiB to its exit: that
    // hold came by falling, so it is not "a plateau after growing 756 MiB from 0 B".
    let doc = json_of(&["show", &ledger("lightning-fit"), "--json"], 0);
    assert!(findings_of(&doc, "plateau").is_empty(), "{doc:#}");
    assert_eq!(doc["peaks"][0]["device_local_peak"], 1_504 * MIB);
}

#[test]
fn a_shell_reporting_its_childs_sigkill_is_said_so() {
    let doc = json_of(&["show", &ledger("sigkill-midrun"), "--json"], 0);
    let end = doc["job_end_text"].as_str().unwrap();
    assert!(
        end.starts_with("exited with code 137: 128 + signal 9 (SIGKILL)"),
        "{end}"
    );
}

#[test]
fn reports_from_the_corpus_name_the_frameworks_and_a_runnable_command() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _, _) in corpus() {
        let out = dir.path().join(format!("{name}.md"));
        let o = out.to_str().unwrap();
        stdout_of(&["report", &ledger(name), "-o", o, "--force"], 0);
        let md = std::fs::read_to_string(&out).unwrap();
        assert!(!md.contains("CUDA_INJECTION64_PATH"), "{name}: {md}");
        assert!(!md.contains("No findings in the snapshot"), "{name}");
        assert!(md.contains("NVIDIA driver | 580.159.04"), "{name}");
        assert!(
            md.contains("| CUDA toolkit | 13.0.2 (the job's CUDA\\_VERSION) |"),
            "{name}: {md}"
        );
        // The two recordings whose job's Python was read (the others predate reading it once
        // a Python process has a GPU open; see their READMEs).
        if matches!(name, "jax-prealloc" | "cupy-pinned-register") {
            assert!(md.contains("| python: jax | 0.11.2 |"), "{name}: {md}");
        }
    }
}

#[test]
fn a_traced_out_of_memory_return_is_a_device_oom_without_any_output() {
    // torch-oom with its output taken away: the two CUDA_ERROR_OUT_OF_MEMORY returns the tracer
    // saw are the evidence left.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("quiet.ledger");
    std::fs::copy(ledger("torch-oom"), &copy).unwrap();
    let conn = rusqlite::Connection::open(&copy).unwrap();
    conn.execute_batch("DELETE FROM output_lines; DELETE FROM output_tail;")
        .unwrap();
    drop(conn);
    let doc = json_of(&["show", copy.to_str().unwrap(), "--json"], 0);
    let oom = findings_of(&doc, "device_oom");
    assert_eq!(oom.len(), 1, "{:#}", doc["findings"]);
    assert_eq!(oom[0]["bytes"], 16 * GIB);
    assert_eq!(oom[0]["pid"], 3405);
    let m = oom[0]["message"].as_str().unwrap();
    assert!(
        m.starts_with("a traced device allocation of 16.0 GiB on its device 0 was refused (CUDA_ERROR_OUT_OF_MEMORY (2)), 2 refused in all"),
        "{m}"
    );
    assert!(
        m.contains("pid 3405 (python3) 64.5 GiB on 0000:00:06.0"),
        "{m}"
    );
}
