//! `top` in a real terminal (tmux): rows and findings on screen, sort key, `q` restores the terminal.

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
            && screen.contains("sorted by host-class"),
        "{screen}"
    );
    tmux(&["send-keys", "-t", &session, "s"]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(tmux(&["capture-pane", "-p", "-t", &session]).contains("sorted by device-local"));
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
    let deadline = Instant::now() + Duration::from_secs(10);
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
