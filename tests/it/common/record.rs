//! The `record` invocations the tests repeat: a job recorded into a file, a tree recorded for a
//! while, a recorder left running.

use super::bin;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `gpuledger [--root ROOT] record --interval INTERVAL -o LEDGER -- JOB…`, not started yet.
pub fn record_job(root: Option<&Path>, interval: &str, ledger: &Path, job: &[&str]) -> Command {
    let mut cmd = bin();
    if let Some(root) = root {
        cmd.arg("--root").arg(root);
    }
    cmd.args(["record", "--interval", interval, "-o"])
        .arg(ledger)
        .arg("--")
        .args(job);
    cmd
}

/// `gpuledger --root TREE record --all --interval INTERVAL --duration DURATION -o LEDGER`, not
/// started yet (more flags may follow).
pub fn record_tree(tree: &Path, interval: &str, duration: &str, ledger: &Path) -> Command {
    let mut cmd = bin();
    cmd.arg("--root")
        .arg(tree)
        .args(["record", "--all", "--interval", interval])
        .args(["--duration", duration, "-o"])
        .arg(ledger);
    cmd
}

/// Starts `gpuledger record --all --interval 50ms -o LEDGER` in the background.
pub fn record_all(ledger: &Path) -> Child {
    bin()
        .args(["record", "--all", "--interval", "50ms", "-o"])
        .arg(ledger)
        .stderr(Stdio::null())
        .spawn()
        .expect("start record")
}

/// A job that sends what the tracer would (the wire format of `tracer/wire`): 2 GiB registered
/// when `register`, 1 GiB of device memory, 256 MiB pinned host memory.
fn traced_job(register: bool) -> String {
    format!(
        r#"
import os, socket, struct, time
fd = int(os.environ["GPULEDGER_TRACE_FD"].split(":")[0])
pid = os.getpid()
def ev(api, op, dev, size, addr, result=0):
    return struct.pack("<QIIBBBBiQQIi", time.time_ns(), pid, pid, api, op, 0, 0, dev, size, addr, 0, result)
GIB = 1 << 30
s = socket.socket(fileno=fd)
s.send(ev(0, 9, -1, 0, 0) + ev(1, 0, 0, GIB, 0x100) + ev(2, 0, -1, GIB // 4, 0x5000))
if {register}:
    s.send(ev(3, 0, -1, 2 * GIB, 0x9000))
time.sleep(0.4)
"#,
        register = if register { "True" } else { "False" }
    )
}

/// `DIR/NAME`, a recording of [`traced_job`] traced without a GPU: `record -- python3 …` with
/// an (empty) tracer library named in GPULEDGER_TRACER.
pub fn traced_recording(dir: &Path, name: &str, register: bool) -> PathBuf {
    let lib = dir.join("libgpuledger_tracer.so");
    std::fs::write(&lib, "").unwrap();
    let ledger = dir.join(name);
    let out = record_job(
        None,
        "50ms",
        &ledger,
        &["python3", "-c", &traced_job(register)],
    )
    .env("GPULEDGER_TRACER", &lib)
    .env_remove("CUDA_INJECTION64_PATH")
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ledger
}
