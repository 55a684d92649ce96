//! Helpers shared by the integration tests: run the real binary, read fixtures and golden files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The built gpuledger binary.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gpuledger"))
}

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Runs gpuledger with `args`.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run gpuledger")
}

/// Runs and returns stdout, asserting the exit code.
pub fn stdout_of(args: &[&str], code: i32) -> String {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "gpuledger {args:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Parses JSON output.
pub fn json_of(args: &[&str], code: i32) -> serde_json::Value {
    serde_json::from_str(&stdout_of(args, code)).expect("valid JSON")
}

/// Compares `actual` with `tests/golden/<name>`; `UPDATE_GOLDEN=1` rewrites the file.
pub fn assert_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with UPDATE_GOLDEN=1",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "output differs from {}\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

/// A `simulate ddp-peer-mirror --live` run writing `tree`; killed when dropped.
pub struct LiveSim(pub std::process::Child);

impl Drop for LiveSim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `simulate ddp-peer-mirror --live SECS --out TREE EXTRA…` and waits until the tree exists.
pub fn live_sim(tree: &Path, secs: &str, extra: &[&str]) -> LiveSim {
    let child = bin()
        .args(["simulate", "ddp-peer-mirror", "--live", secs, "--out"])
        .arg(tree)
        .args(extra)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start simulate");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !tree.join("proc/meminfo").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "simulate did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    LiveSim(child)
}

/// A running `gpuledger serve`; killed when dropped.
pub struct Server {
    /// The process.
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `gpuledger --root ROOT serve --listen 127.0.0.1:PORT EXTRA…` and waits until it listens.
pub fn serve_root(root: &Path, extra: &[&str]) -> Server {
    use std::io::{BufRead, BufReader};
    let port = free_port();
    let mut child = bin()
        .arg("--root")
        .arg(root)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("/metrics"), "{line}");
    Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// Starts `gpuledger record --all --interval 50ms -o LEDGER` in the background.
pub fn record_all(ledger: &Path) -> std::process::Child {
    bin()
        .args(["record", "--all", "--interval", "50ms", "-o"])
        .arg(ledger)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start record")
}
