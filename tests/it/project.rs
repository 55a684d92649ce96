//! `project`: absurd sizes are an error, and the verdict under the table matches its rows.

use crate::common;
use common::*;

#[test]
fn verdicts() {
    // (arguments, exit code, what the last line says)
    let cases: [(&[&str], i32, &str); 4] = [
        (
            &["--ranks", "100", "--vram-per-rank", "1MiB", "--host-mem", "8GiB"],
            0,
            "The job stops fitting at 92 ranks: 92 × 91 × 1.0 MiB = 8.2 GiB of pinned host RAM, with 8.0 GiB free for it.",
        ),
        (
            &["--ranks", "8", "--vram-per-rank", "1GiB", "--host-mem", "64GiB", "--peers", "ring"],
            0,
            "Up to 8 ranks fit; the job would stop fitting at 32 ranks.",
        ),
        (
            &["--ranks", "4", "--vram-per-rank", "0", "--host-mem", "1GiB"],
            0,
            "Every rank count up to 1024 fits.",
        ),
        (
            &["--ranks", "8", "--vram-per-rank", "4000000TiB", "--host-mem", "64GiB"],
            1,
            "exceeds 16 EiB, more than any machine holds; give a per-rank size below 292.6 PiB",
        ),
    ];
    for (args, code, last) in cases {
        let out = run(&[&["project"], args].concat());
        let text = if code == 0 {
            String::from_utf8(out.stdout).unwrap()
        } else {
            String::from_utf8(out.stderr).unwrap()
        };
        assert_eq!(out.status.code(), Some(code), "{args:?}: {text}");
        assert!(
            text.trim_end().ends_with(last),
            "{args:?}: expected {last:?} at the end of\n{text}"
        );
    }
}

#[test]
fn rows_past_64_ranks_are_judged() {
    let out = stdout_of(
        &[
            "project",
            "--ranks",
            "100",
            "--vram-per-rank",
            "1MiB",
            "--host-mem",
            "8GiB",
        ],
        0,
    );
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with("fit") || l.ends_with("fits"))
        .collect();
    assert_eq!(rows.len(), 99, "{out}");
    assert!(rows[89].trim_start().starts_with("91 ") && rows[89].ends_with(" fits"));
    assert!(rows[90].trim_start().starts_with("92 ") && rows[90].ends_with("does not fit"));
    assert!(!out.contains("up to 64"));
}
