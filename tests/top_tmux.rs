//! `top` in a real terminal (tmux): rows and findings on screen, sort key, `q` restores the terminal.

mod common;
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
