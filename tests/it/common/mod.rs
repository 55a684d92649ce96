//! Helpers shared by the integration tests: run the real binary, read fixtures and golden files.
//! `record`: the recording invocations; `serve`: a running exporter; `tools`: optional programs.

mod record;
mod serve;
mod tools;

pub use record::*;
pub use serve::*;
pub use tools::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The built gpuledger binary, its text 80 columns wide (`COLUMNS=80`: piped text is otherwise
/// not folded, and the goldens and layout tests read the folded form); `tests/it/piped.rs`
/// removes it.
pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuledger"));
    cmd.env("COLUMNS", "80");
    cmd
}

/// `<repository>/<rel>`.
pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// `deploy/`: the Prometheus, Grafana, systemd and Kubernetes files.
pub fn deploy() -> PathBuf {
    repo_path("deploy")
}

/// The text of `path`; the panic names the file.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    repo_path("tests/fixtures").join(name)
}

/// The snapshot fixtures: capture trees built from real fdinfo samples, one per driver case.
pub const SNAPSHOT_FIXTURES: [&str; 12] = [
    "seed-2605",
    "seed-2622",
    "seed-mainline",
    "xe-two-tile",
    "amdgpu",
    "i915",
    "panfrost",
    "shared-client",
    "k8s-slurm-dmem",
    "rocm-kfd",
    "xe-suspended",
    "amdgpu-meminfo",
];

/// For each of [`SNAPSHOT_FIXTURES`], its name and the stdout of `gpuledger --root FIXTURE
/// FLAGS…` (which must exit 0).
pub fn fixture_snapshots<'a>(
    flags: &'a [&'a str],
) -> impl Iterator<Item = (&'static str, String)> + 'a {
    SNAPSHOT_FIXTURES.into_iter().map(move |name| {
        let root = fixture(name);
        let mut args = vec!["--root", root.to_str().expect("utf-8 fixture path")];
        args.extend(flags);
        (name, stdout_of(&args, 0))
    })
}

/// Copies fixture `name` (symlinks kept) to `dest`.
pub fn copy_fixture(name: &str, dest: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(fixture(name))
        .arg(dest)
        .status()
        .expect("run cp");
    assert!(status.success(), "cp -a {name} {}", dest.display());
}

/// A copy of fixture `name` in a fresh temporary directory, to plant hostile values in.
pub fn fixture_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join(name);
    copy_fixture(name, &tree);
    (tmp, tree)
}

/// Runs gpuledger with `args`.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run gpuledger")
}

/// Runs `cmd` (any program) and asserts that it succeeds, showing its stdout and stderr otherwise.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
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

/// The findings of `kind` in a `--json` document.
pub fn findings_of<'a>(doc: &'a serde_json::Value, kind: &str) -> Vec<&'a serde_json::Value> {
    doc["findings"]
        .as_array()
        .expect("a findings array")
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

/// Compares `actual` with `tests/golden/<name>`; `UPDATE_GOLDEN=1` rewrites the file.
pub fn assert_golden(name: &str, actual: &str) {
    let path = repo_path("tests/golden").join(name);
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
