//! A job that dies of a device-memory failure gets a `device_oom` finding: the layer, the bytes
//! asked and who held device memory at that moment (issue 34). The machine is a simulated 2-rank
//! tree, so the holders are known: each rank holds 18.7 GiB of VRAM on its home card.

use crate::common;
use common::*;

const TORCH_OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 \
    GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.23 GiB is free.";

fn show_after(job_line: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    let t = tree.to_str().unwrap();
    stdout_of(&["simulate", "ddp-peer-mirror", "--out", t], 0);
    let ledger = dir.path().join("oom.ledger");
    let l = ledger.to_str().unwrap();
    let script = format!("sleep 0.6; echo '{job_line}' >&2; sleep 0.4; exit 1");
    let out = bin()
        .args(["--root", t, "record", "--interval", "100ms", "-o", l])
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    json_of(&["show", l, "--json"], 0)
}

#[test]
fn a_torch_oom_names_the_bytes_asked_and_the_holders() {
    let doc = show_after(TORCH_OOM);
    let oom = findings_of(&doc, "device_oom");
    assert_eq!(oom.len(), 1, "{:#}", doc["findings"]);
    let f = oom[0];
    assert_eq!(f["severity"], "critical");
    assert_eq!(f["bytes"], 20u64 << 30);
    let t = f["t_s"].as_f64().unwrap();
    assert!((0.4..1.0).contains(&t), "{t}");
    let m = f["message"].as_str().unwrap();
    for part in [
        "PyTorch could not allocate device memory on its GPU 0",
        "asked for 20.0 GiB, 1.2 GiB free",
        "rank 0 (pid 4001, python3) 18.7 GiB on 0000:03:00.0",
        "rank 1 (pid 4002, python3) 18.7 GiB on 0000:04:00.0",
    ] {
        assert!(m.contains(part), "{part:?} not in {m}");
    }
}

#[test]
fn a_host_allocation_failure_is_no_device_oom() {
    let doc = show_after("MemoryError: Unable to allocate 8.00 GiB for an array");
    assert!(findings_of(&doc, "device_oom").is_empty());
}
