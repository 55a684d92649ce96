//! Hostile recordings against the human outputs and the plot (issue 23, items 7 and 9): a rate
//! value of 1.7e308, ±1e308 and inf written into a file, and terminal escapes in the recorded
//! command, the rate unit, a node name and a file name. Each test builds its recordings itself.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// ESC [2J (clear screen) and an OSC title sequence, as a hostile job would write them.
const ESC: &str = "\u{1b}[2J\u{1b}]0;owned\u{7}";

/// Records `sh -c SCRIPT` with a `wave` rate series whose unit holds [`ESC`].
fn record(dir: &Path, name: &str, script: &str) -> PathBuf {
    let ledger = dir.join(format!("{name}.ledger"));
    run_ok(
        bin()
            .args(["record", "--interval", "50ms", "--rate"])
            .arg(format!("wave=wave ([-+0-9.e]+|inf):s{ESC}/wave"))
            .arg("-o")
            .arg(&ledger)
            .args(["--", "sh", "-c", script]),
    );
    ledger
}

fn sql(db: &Path, statements: &str) {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(statements)
        .unwrap();
}

fn assert_no_control_bytes(what: &str, out: &std::process::Output) {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what} wrote raw control characters:\n{text:?}"
    );
}

#[test]
fn absurd_rate_values_are_not_recorded_and_a_crafted_file_still_plots() {
    let tmp = tempfile::tempdir().unwrap();
    let script = format!(
        "echo 'wave 1.7e308'; echo 'wave -1e308'; echo 'wave inf'; echo 'wave {}'; echo 'wave 2.5'",
        "9".repeat(309)
    );
    let ledger = record(tmp.path(), "a", &script);
    let kept: Vec<f64> = {
        let c = rusqlite::Connection::open(&ledger).unwrap();
        let mut st = c.prepare("SELECT value FROM rate_points").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(kept, [2.5], "only the plausible value is a rate point");
    // What a crafted file can still hold: values the recorder would never write.
    sql(
        &ledger,
        "INSERT INTO rate_points(rate, t_ms, value) SELECT id, 1, 1.7e308 FROM rates;
         INSERT INTO rate_points(rate, t_ms, value) SELECT id, 2, -1e308 FROM rates;
         INSERT INTO rate_points(rate, t_ms, value) SELECT id, 3, 9e999 FROM rates;
         INSERT INTO rate_points(rate, t_ms, value) SELECT id, 4, -9e999 FROM rates;",
    );
    let html = tmp.path().join("plot.html");
    let started = Instant::now();
    let mut child = bin()
        .arg("plot")
        .arg(&ledger)
        .arg("-o")
        .arg(&html)
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("plot did not finish in 30 s on a crafted rate value");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<figure class=\"rate\">"),
        "the chart is drawn"
    );
    let show = bin().arg("show").arg(&ledger).output().unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("rate wave: 1 points"), "{text}");
}

#[test]
fn recorded_text_reaches_the_terminal_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let a = record(tmp.path(), "a", &format!("echo 'wave 3' # {ESC}"));
    let b = record(tmp.path(), "b", "echo 'wave 4'");
    let show = bin().arg("show").arg(&a).output().unwrap();
    assert_no_control_bytes("show", &show);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("\\e[2J"),
        "the escape is shown, visibly: {text}"
    );

    let diff = bin().arg("diff").arg(&a).arg(&b).output().unwrap();
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(text.contains("different jobs"), "{text}");
    assert_no_control_bytes("diff", &diff);

    // A directory of one job's recordings: a node name and a file name with escapes in them.
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    for (i, from) in [&a, &b].into_iter().enumerate() {
        let to = job.join(format!("n{i}{ESC}.ledger"));
        std::fs::copy(from, &to).unwrap();
        sql(
            &to,
            &format!(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('label.node', 'node{i}{ESC}')"
            ),
        );
    }
    let show = bin().arg("show").arg(&job).output().unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("nodes node0\\e[2J"), "{text}");
    assert_no_control_bytes("show of a directory", &show);
}
