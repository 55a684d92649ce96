//! API tracing end to end without a GPU: `record -- CMD` with a tracer library named in
//! GPULEDGER_TRACER, where the job is a Python script that sends what the tracer would (the
//! wire format of `tracer/wire`) on the channel it inherited: tracing started, 2 GiB
//! registered and unregistered, a device allocation still live at the end, a failed cuMemCreate,
//! 4 events the tracer dropped. `show` must list them by call, `--no-trace` must leave them out.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

const JOB: &str = r#"
import os, socket, struct, time
fd = os.environ.get("GPULEDGER_TRACE_FD")
if fd is None:
    raise SystemExit(0)
assert os.environ["CUDA_INJECTION64_PATH"].endswith("libgpuledger_tracer.so")
pid = os.getpid()
def ev(api, op, dev, size, addr, result=0):
    return struct.pack("<QIIBBBBiQQIi", time.time_ns(), pid, pid, api, op, 0, 0, dev, size, addr, 0, result)
GIB = 1 << 30
s = socket.socket(fileno=int(fd.split(":")[0]))
s.send(ev(0, 9, -1, 0, 0) + ev(3, 0, -1, 2 * GIB, 0x9000) + ev(1, 0, 0, GIB, 0x100))
s.send(ev(3, 1, -1, 0, 0x9000) + ev(6, 0, 0, 2 << 20, 0, 800) + ev(0, 11, -1, 4, 0))
time.sleep(0.3)
"#;

fn record(dir: &Path, extra: &[&str]) -> PathBuf {
    let lib = dir.join("libgpuledger_tracer.so");
    std::fs::write(&lib, "").unwrap();
    let ledger = dir.join(format!("r{}.ledger", extra.len()));
    run_ok(
        bin()
            .args(["record", "--interval", "50ms", "-o"])
            .arg(&ledger)
            .args(extra)
            .args(["--", "python3", "-c", JOB])
            .env("GPULEDGER_TRACER", &lib)
            .env_remove("CUDA_INJECTION64_PATH"),
    );
    ledger
}

#[test]
fn traced_calls_show_by_call_and_no_trace_leaves_them_out() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = record(tmp.path(), &[]);
    let text = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    assert!(
        text.contains("1 process traced; 4 events dropped"),
        "{text}"
    );
    let line = |api: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(api))
            .unwrap_or_else(|| panic!("no {api} row in {text}"))
            .to_string()
    };
    let reg = line("registered");
    assert!(reg.contains("host") && reg.contains("2.0 GiB"), "{reg}");
    assert!(reg.trim_end().ends_with("0 B"), "{reg}");
    assert!(line("device").contains("1.0 GiB"));
    // At 80 columns the failures leave the table for a line under their row.
    let vmm = text.split(&line("vmm")).nth(1).unwrap().lines().nth(1);
    assert_eq!(
        vmm,
        Some("    FAILED 1 × CUDA_ERROR_NOT_PERMITTED (800)"),
        "{text}"
    );
    let json = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    assert_eq!(json["calls"]["dropped"], 4);
    assert_eq!(json["calls"]["rows"].as_array().unwrap().len(), 3);

    let untraced = record(tmp.path(), &["--no-trace"]);
    let json = json_of(&["show", untraced.to_str().unwrap(), "--json"], 0);
    assert_eq!(json["calls"]["rows"].as_array().unwrap().len(), 0);
    assert_eq!(json["calls"]["state"], "off: --no-trace");
}

#[test]
fn explicit_trace_of_an_attached_process_is_a_usage_error() {
    let out = bin()
        .args([
            "record",
            "--trace",
            "--pid",
            "1",
            "--duration",
            "100ms",
            "-o",
        ])
        .arg(tempfile::tempdir().unwrap().path().join("x.ledger"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only a command gpuledger starts"));
}
