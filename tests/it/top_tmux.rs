//! `top` in a real terminal (tmux): rows and findings on screen, sort key, scrolling and the counts
//! of hidden rows at 80x24 and 200x50, the key help, `q` restores the terminal.

use crate::common;
use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux installed (.ci/run installs it)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn top_shows_ranks_and_findings_of_a_live_simulation() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("sim");
    let sim = live_sim(&tree, "20s", &[]);
    let session = format!("gpuledger-top-{}", std::process::id());
    let cmd = format!(
        "{} --root {} top --interval 200ms; echo TOP-EXITED; sleep 30",
        env!("CARGO_BIN_EXE_gpuledger"),
        tree.display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "200",
        "-y",
        "50",
        &cmd,
    ]);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut screen = String::new();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        screen = tmux(&["capture-pane", "-p", "-t", &session]);
        if screen.contains("CRITICAL peer_mirror") {
            break;
        }
    }
    let cleanup = |s: &str| {
        tmux(&["kill-session", "-t", s]);
    };
    let ok = screen.contains("4001")
        && screen.contains("4002")
        && screen.contains("CRITICAL peer_mirror: rank 0 (pid 4001");
    if !ok {
        cleanup(&session);
    }
    assert!(ok, "{screen}");
    assert!(
        screen.contains("host memory")
            && screen.contains("0000:03:00.0")
            && screen.contains("sorted by rank"),
        "{screen}"
    );
    tmux(&["send-keys", "-t", &session, "s"]);
    assert!(wait_for(&session, "sorted by host-class").contains("sorted by host-class"));
    tmux(&["send-keys", "-t", &session, "q"]);
    std::thread::sleep(Duration::from_millis(700));
    let after = tmux(&["capture-pane", "-p", "-t", &session]);
    cleanup(&session);
    drop(sim);
    assert!(after.contains("TOP-EXITED"), "{after}");
    assert!(
        !after.contains("host memory"),
        "terminal restored after q: {after}"
    );
}

/// Waits for `marker` in the pane, then returns the screen.
fn wait_for(session: &str, marker: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut screen = String::new();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        screen = tmux(&["capture-pane", "-p", "-t", session]);
        if screen.contains(marker) {
            break;
        }
    }
    screen
}

#[test]
fn top_in_a_terminal_with_stdin_or_stdout_redirected_refuses_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("top.out");
    let bin = env!("CARGO_BIN_EXE_gpuledger");
    // As under cron or `ssh host gpuledger top > log`: a terminal exists, but not on both ends.
    for (case, redirect) in [
        ("stdin", "< /dev/null"),
        ("stdout", &*format!("> {}", out.display())),
    ] {
        let session = format!("gpuledger-notty-{case}-{}", std::process::id());
        let cmd = format!(
            "{bin} --root {} top {redirect}; echo TOP-EXIT-$?; sleep 30",
            fixture("seed-2622").display()
        );
        tmux(&[
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "160",
            "-y",
            "40",
            &cmd,
        ]);
        let screen = wait_for(&session, "TOP-EXIT-");
        tmux(&["kill-session", "-t", &session]);
        assert!(screen.contains("TOP-EXIT-2"), "{case}: {screen}");
        assert!(!screen.contains("panicked"), "{case}: {screen}");
        assert!(
            !screen.contains("host memory"),
            "{case}: no half-drawn screen: {screen}"
        );
        if case == "stdin" {
            assert!(screen.contains("needs a terminal"), "{screen}");
        }
    }
    let written = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(
        !written.contains('\u{1b}'),
        "no escape codes written to the file: {written:?}"
    );
}

/// The process table's data rows (they start with a pid of the simulation, 4001 on).
fn table_rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .map(|r| r.trim_start_matches('│').trim_start())
        .filter(|r| r.starts_with("40") && r.contains("python3"))
        .collect()
}

/// 64 ranks on 64 cards (4,096 process × device rows) at 80x24 and 200x50: rank 0 first (the
/// snapshot's order), hidden rows counted on every pane, PgDn moves a page, `?` shows the keys,
/// `q` leaves with the terminal restored.
#[test]
fn top_scrolls_sixty_four_ranks_and_counts_what_it_hides() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("sim64");
    let out = bin()
        .args(["simulate", "ddp-peer-mirror", "--ranks", "64"])
        .args(["--backing", "registered-only", "--at", "10s", "--out"])
        .arg(&tree)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for (w, h) in [("80", "24"), ("200", "50")] {
        let session = format!("gpuledger-top64-{w}-{}", std::process::id());
        let cmd = format!(
            "{} --root {} top --interval 30s; echo TOP-EXITED; sleep 30",
            env!("CARGO_BIN_EXE_gpuledger"),
            tree.display()
        );
        tmux(&["new-session", "-d", "-s", &session, "-x", w, "-y", h, &cmd]);
        let first = wait_for(&session, "more below");
        let rows = table_rows(&first);
        let page = rows.len();
        let checks = [
            (page >= 5, "at least 5 table rows"),
            (
                rows.first()
                    .is_some_and(|r| r.starts_with("4001") && r.contains("0000:03:00.0 *")),
                "rank 0's home first",
            ),
            (
                first.contains(&format!("+{} more below", 4096 - page)),
                "hidden table rows counted",
            ),
            (
                first.contains("devices (64)") && first.matches("more below").count() >= 2,
                "hidden devices counted",
            ),
            (first.contains("processes 64 (sorted by rank"), "title"),
            (
                first.contains("machine       driver-held "),
                "the machine's history",
            ),
            (
                first.lines().any(|l| {
                    l.contains("pid 4001 ") && l.contains(" host ") && l.contains(" local ")
                }),
                "the history of the process at the top",
            ),
        ];
        for (ok, what) in checks {
            if !ok {
                tmux(&["kill-session", "-t", &session]);
            }
            assert!(ok, "{w}x{h}: {what}:\n{first}");
        }
        tmux(&["send-keys", "-t", &session, "PageDown"]);
        let moved = wait_for(&session, "more above");
        let after = table_rows(&moved);
        let ok = moved.contains(&format!("+{page} more above"))
            && after.first().is_some_and(|r| !r.contains("0000:03:00.0 *"));
        if !ok {
            tmux(&["kill-session", "-t", &session]);
        }
        assert!(ok, "{w}x{h}: PgDn moves a page:\n{moved}");
        tmux(&["send-keys", "-t", &session, "?"]);
        let help = wait_for(&session, "keys (gpuledger top)");
        let ok = help.contains("PgUp PgDn") && help.contains("q Ctrl-C");
        if !ok {
            tmux(&["kill-session", "-t", &session]);
        }
        assert!(ok, "{w}x{h}: help:\n{help}");
        tmux(&["send-keys", "-t", &session, "q"]);
        let end = wait_for(&session, "TOP-EXITED");
        tmux(&["kill-session", "-t", &session]);
        assert!(end.contains("TOP-EXITED"), "{w}x{h}: q quits:\n{end}");
        assert!(
            !end.contains("more below"),
            "{w}x{h}: terminal restored:\n{end}"
        );
    }
}
