//! The trace channel against round three's attacks, end to end through `record`: no path the
//! umask can open to others, the job's end kept across a privilege drop, the kernel's pid for a
//! job in a pid namespace, a flood that costs the job its own events but never the sampling.
//! Each job is a Python script sending the tracer's wire format on the channel it inherited.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Exits 3 unless the fallback socket's directory and socket are 0700 and 0600.
const MODES: &str = r#"
import os, stat
sock = os.environ["GPULEDGER_TRACE_SOCKET"]
modes = (stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode), stat.S_IMODE(os.stat(sock).st_mode))
if modes != (0o700, 0o600):
    print("modes", [oct(m) for m in modes]); raise SystemExit(3)
"#;

/// Sends 1 GiB registered under a pid that is not the sender's (1), on the inherited channel.
const SEND: &str = r#"
import os, socket, struct, time
s = socket.socket(fileno=int(os.environ["GPULEDGER_TRACE_FD"].split(":")[0]))
s.send(struct.pack("<QIIBBBBiQQIi", time.time_ns(), 1, 1, 3, 0, 0, 0, -1, 1 << 30, 0x9000, 0, 0))
time.sleep(0.3)
"#;

fn tracer(dir: &Path) -> PathBuf {
    let lib = dir.join("libgpuledger_tracer.so");
    std::fs::write(&lib, "").unwrap();
    lib
}

/// The peak RSS of the last `record` run here, in kB.
static PEAK_RSS_KB: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `record` of `job` (a shell command line) at `interval`, under umask 000; its recording.
fn record(dir: &Path, interval: &str, job: &str) -> PathBuf {
    let ledger = dir.join("r.ledger");
    let bin = bin().get_program().to_owned();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 000; exec \"$0\" record --interval {interval} -o \"$1\" -- sh -c \"$2\""
        ))
        .arg(bin)
        .arg(&ledger)
        .arg(job)
        .env("GPULEDGER_TRACER", tracer(dir))
        .env_remove("CUDA_INJECTION64_PATH")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", out.id());
    let mut peak = 0;
    while let Ok(text) = std::fs::read_to_string(&status) {
        let hwm = text.lines().find_map(|l| l.strip_prefix("VmHWM:"));
        match hwm.and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok()) {
            Some(kb) => peak = peak.max(kb),
            None => break,
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    PEAK_RSS_KB.store(peak, std::sync::atomic::Ordering::Relaxed);
    let out = out.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ledger
}

fn calls(ledger: &Path) -> serde_json::Value {
    json_of(&["show", ledger.to_str().unwrap(), "--json"], 0)["calls"].clone()
}

fn python(script: &str) -> String {
    format!("python3 -c '{}'", script.replace('\'', "'\\''"))
}

/// The registered row's pid and peak bytes.
fn registered(calls: &serde_json::Value) -> (u64, u64) {
    let rows = calls["rows"].as_array().unwrap();
    let r = rows
        .iter()
        .find(|r| r["api"] == "registered")
        .unwrap_or_else(|| panic!("no registered row: {calls}"));
    (r["pid"].as_u64().unwrap(), r["peak_live"].as_u64().unwrap())
}

#[test]
fn under_umask_000_the_fallback_is_private_and_events_carry_the_kernel_pid() {
    let tmp = tempfile::tempdir().unwrap();
    let both = format!("{MODES}{SEND}");
    let c = calls(&record(tmp.path(), "50ms", &python(&both)));
    let (pid, bytes) = registered(&c);
    assert_eq!(bytes, 1 << 30);
    assert_ne!(
        pid, 1,
        "the sender's pid from the kernel, not the one it claimed"
    );
    assert!(c["state"].as_str().unwrap().starts_with("on: "), "{c}");
}

#[test]
fn a_job_that_drops_privileges_keeps_its_channel() {
    let usable = Path::new("/usr/bin/python3").exists() && is_root();
    if Command::new("setpriv").arg("--version").output().is_err() || !usable {
        eprintln!("skipped: needs setpriv, /usr/bin/python3 and root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The fallback socket is root's (0700): only the inherited end can work for uid 65534.
    // The system's Python: one under root's home is not readable by uid 65534.
    let job = format!(
        "setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/{}",
        python(SEND)
    );
    let c = calls(&record(tmp.path(), "50ms", &job));
    assert_eq!(registered(&c).1, 1 << 30, "{c}");
}

#[test]
fn a_job_in_a_pid_namespace_is_attributed_its_host_pid() {
    let probe = Command::new("unshare").args(["-p", "-f", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: unshare -p -f is not permitted here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let claims_one = SEND.replace(
        "time.sleep(0.3)",
        "assert os.getpid() == 1\ntime.sleep(0.3)",
    );
    let c = calls(&record(
        tmp.path(),
        "50ms",
        &format!("unshare -p -f {}", python(&claims_one)),
    ));
    let (pid, _) = registered(&c);
    assert!(
        pid > 1,
        "pid {pid}: the host's pid of the namespace's pid 1"
    );
}

/// A job floods its own channel with 1 M datagrams while recorded at 100 ms: the samples keep
/// coming (≥ 90 % of the intervals) and gpuledger's memory stays bounded (its peak RSS, read
/// by the job from its parent, under 200 MiB).
#[test]
fn a_flood_of_a_million_datagrams_never_stops_the_sampling() {
    let tmp = tempfile::tempdir().unwrap();
    let flood = r#"
import os, socket, struct, time
s = socket.socket(fileno=int(os.environ["GPULEDGER_TRACE_FD"].split(":")[0]))
s.setblocking(False)
d = struct.pack("<QIIBBBBiQQIi", 0, 0, 0, 1, 0, 0, 0, 0, 4096, 1, 0, 0)
t0 = time.time(); sent = 0
while sent < 1000000:
    try:
        s.send(d); sent += 1
    except BlockingIOError:
        time.sleep(0.0001)
time.sleep(0.5)
"#;
    let ledger = record(tmp.path(), "100ms", &format!("exec {}", python(flood)));
    let json = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    let text = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    let out = json["calls"]["state"].to_string();
    let samples = json["samples"].as_u64().unwrap();
    let duration_ms = (json["duration_s"].as_f64().unwrap() * 1000.0) as u64;
    let expected = duration_ms / 100;
    assert!(duration_ms >= 1000, "the flood lasted {duration_ms} ms");
    assert!(
        samples * 10 >= expected * 9,
        "{samples} samples in {duration_ms} ms\n{text}\n{out:.2000}"
    );
    let hwm_kb = PEAK_RSS_KB.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("flood: {samples} samples in {duration_ms} ms, peak RSS {hwm_kb} kB");
    let dropped = json["calls"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "the flood beyond the inbox is counted");
    assert!(hwm_kb < 200 * 1024, "peak RSS {hwm_kb} kB");
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
