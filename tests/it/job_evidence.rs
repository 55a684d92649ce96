//! The job's own evidence end to end: `record -- CMD` of a fake job that prints progress lines, a
//! UR error, a Python traceback, binary bytes and phase markers; what the recording stores; what
//! show, diff, report and plot make of it; schema 3 recordings still read.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// Prints three progress lines of `$WAVE` s/wave with a marker before each, a UR error on
/// stderr, a Python traceback and a line of binary bytes, then exits 3.
const JOB: &str = r#"
for i in 1 2 3; do
  echo "epoch $i" >> "$GPULEDGER_MARKERS"
  echo "wave $i: wave time $WAVE s"
done
echo "zeCommandListAppend: UR_RESULT_ERROR_OUT_OF_RESOURCES" >&2
printf 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\nRuntimeError: UR error\n' >&2
printf 'bin \001\033[31m\377 end\n'
exit 3
"#;

fn record(dir: &Path, name: &str, wave: &str) -> (PathBuf, std::process::Output) {
    let ledger = dir.join(format!("{name}.ledger"));
    let out = bin()
        .args([
            "record",
            "--interval",
            "50ms",
            "--rate",
            "wave=wave time ([0-9.]+) s:s/wave",
            "-o",
        ])
        .arg(&ledger)
        .args(["--", "sh", "-c", JOB])
        .env("WAVE", wave)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (ledger, out)
}

fn rows(db: &Path, sql: &str) -> Vec<Vec<String>> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c.prepare(sql).unwrap();
    let n = st.column_count();
    st.query_map([], |r| {
        (0..n)
            .map(|i| {
                r.get::<_, rusqlite::types::Value>(i)
                    .map(|v| format!("{v:?}"))
            })
            .collect()
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn a_fake_jobs_output_passes_through_and_its_evidence_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let (ledger, out) = record(tmp.path(), "a", "3.0");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wave 3: wave time 3.0 s\n"), "{stdout}");
    assert!(
        out.stdout.windows(4).any(|w| w == b"\x01\x1b[3"),
        "bytes pass unchanged"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("zeCommandListAppend: UR_RESULT_ERROR_OUT_OF_RESOURCES\n"),
        "{stderr}"
    );
    assert!(!stdout.contains("UR_RESULT"), "stderr stays on stderr");
    let errors = rows(
        &ledger,
        "SELECT stream, kind, text FROM output_lines ORDER BY rowid",
    );
    assert_eq!(
        errors,
        [
            [
                "Text(\"stderr\")",
                "Text(\"unified_runtime\")",
                "Text(\"zeCommandListAppend: UR_RESULT_ERROR_OUT_OF_RESOURCES\")"
            ],
            [
                "Text(\"stderr\")",
                "Text(\"python_exception\")",
                "Text(\"RuntimeError: UR error\")"
            ],
        ]
    );
    let points = rows(&ledger, "SELECT rate, value FROM rate_points ORDER BY t_ms");
    assert_eq!(
        points,
        vec![vec!["Integer(1)".to_string(), "Real(3.0)".into()]; 3]
    );
    let markers = rows(&ledger, "SELECT text FROM markers ORDER BY t_ms");
    assert_eq!(
        markers,
        [
            ["Text(\"epoch 1\")"],
            ["Text(\"epoch 2\")"],
            ["Text(\"epoch 3\")"]
        ]
    );
    let tail = rows(&ledger, "SELECT COUNT(*) FROM output_tail");
    assert_eq!(tail, [["Integer(8)"]]);
    let version = rows(
        &ledger,
        "SELECT value FROM meta WHERE key = 'schema_version'",
    );
    assert_eq!(version, [["Text(\"5\")"]]);

    let show = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    let e = &show["evidence"];
    assert_eq!(e["errors"][0]["kind"], "unified_runtime");
    assert_eq!(e["rates"][0]["median"], 3.0);
    assert_eq!(e["rates"][0]["n"], 3);
    assert_eq!(e["markers"].as_array().unwrap().len(), 3);
    assert_eq!(e["tail"].as_array().unwrap().len(), 8);
    let text = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    assert!(
        text.contains("rate wave: 3 points, median ~3.0 s/wave"),
        "{text}"
    );
    assert!(
        text.contains("python_exception  RuntimeError: UR error"),
        "{text}"
    );
    assert!(
        text.contains("marker") && text.contains("epoch 2"),
        "{text}"
    );
}

#[test]
fn diff_says_whether_the_throughput_medians_differ_by_more_than_five_percent() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _) = record(tmp.path(), "a", "3.0");
    let (b, _) = record(tmp.path(), "b", "3.1");
    let (c, _) = record(tmp.path(), "c", "4.0");
    let same = stdout_of(&["diff", a.to_str().unwrap(), b.to_str().unwrap()], 0);
    let row = same
        .lines()
        .find(|l| l.contains("throughput wave"))
        .unwrap();
    assert!(
        row.contains("~3.0 s/wave") && row.contains("~3.1 s/wave"),
        "{row}"
    );
    assert!(row.contains("same (within 5 %)"), "{row}");
    // The table cuts a long cell and writes it out in full below.
    let flowed = same.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flowed.contains("output, A: unified_runtime: zeCommandListAppend"),
        "{same}"
    );
    let differs = stdout_of(&["diff", a.to_str().unwrap(), c.to_str().unwrap()], 0);
    let row = differs
        .lines()
        .find(|l| l.contains("throughput wave"))
        .unwrap();
    assert!(
        row.contains("~4.0 s/wave") && row.contains("differs (+33 %)"),
        "{row}"
    );

    let report = stdout_of(&["report", a.to_str().unwrap(), c.to_str().unwrap()], 0);
    assert!(
        report.contains(r"| throughput wave (median) | \~3.0 s/wave | \~4.0 s/wave |"),
        "{report}"
    );
    assert!(report.contains("differs (+33 %)"), "{report}");
    assert!(
        report.contains("unified_runtime] zeCommandListAppend"),
        "{report}"
    );
    let html = tmp.path().join("plot.html");
    run_ok(bin().args(["plot", a.to_str().unwrap(), "-o"]).arg(&html));
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("<figure class=\"rate\">") && html.contains("wave (3 points)"));
    assert!(html.contains("epoch 2"), "markers are labelled");
}

#[test]
fn the_job_is_told_where_to_write_markers_and_a_python_buffering_choice_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("env.ledger");
    let out = run_ok(
        bin()
            .args(["record", "-o"])
            .arg(&ledger)
            .args([
                "--",
                "sh",
                "-c",
                "echo \"[$PYTHONUNBUFFERED]\"; test -f \"$GPULEDGER_MARKERS\"",
            ])
            .env("PYTHONUNBUFFERED", ""),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[]\n");
    let out = bin()
        .args(["record", "-o"])
        .arg(tmp.path().join("env2.ledger"))
        .args(["--", "sh", "-c", "echo \"[$PYTHONUNBUFFERED]\""])
        .env_remove("PYTHONUNBUFFERED")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[1]\n");
}

#[test]
fn an_error_kind_this_build_does_not_know_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (ledger, _) = record(tmp.path(), "odd", "3.0");
    let c = rusqlite::Connection::open(&ledger).unwrap();
    c.execute("UPDATE output_lines SET kind = 'gpu_on_fire'", [])
        .unwrap();
    drop(c);
    let out = run(&["show", ledger.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("output error kind \"gpu_on_fire\""), "{err}");
}

#[test]
fn a_schema_3_recording_reads_with_no_evidence_and_a_newer_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (ledger, _) = record(tmp.path(), "old", "3.0");
    let c = rusqlite::Connection::open(&ledger).unwrap();
    c.execute_batch(
        "DROP TABLE output_lines; DROP TABLE output_tail; DROP TABLE rates; DROP TABLE rate_points;
         DROP TABLE markers; DELETE FROM meta WHERE key LIKE 'output%';
         UPDATE meta SET value = '3' WHERE key = 'schema_version';",
    )
    .unwrap();
    drop(c);
    let show = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    assert_eq!(show["evidence"]["captured"], false);
    assert_eq!(show["evidence"]["errors"].as_array().unwrap().len(), 0);
    let text = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    assert!(!text.contains("Job output"), "{text}");
    let c = rusqlite::Connection::open(&ledger).unwrap();
    c.execute(
        "UPDATE meta SET value = '6' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(c);
    let out = run(&["show", ledger.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("newer gpuledger"));
}
