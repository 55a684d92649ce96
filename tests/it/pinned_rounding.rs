//! Issue 33: the pinned-allocator finding from a traced recording, without a GPU. The job sends
//! what the tracer would (the wire format of `tracer/wire`): pinned host allocations
//! (`cuMemHostAlloc`, API kind 2) of the sizes given. Blocks rounded up to powers of two make
//! `pinned_rounding` with the allocator setting; a DataLoader's pinned batches do not.

use crate::common::*;
use std::path::{Path, PathBuf};

fn job(sizes: &[u64]) -> String {
    let list: Vec<String> = sizes.iter().map(u64::to_string).collect();
    format!(
        r#"
import os, socket, struct, time
fd = int(os.environ["GPULEDGER_TRACE_FD"].split(":")[0])
pid = os.getpid()
def ev(api, op, dev, size, addr, result=0):
    return struct.pack("<QIIBBBBiQQIi", time.time_ns(), pid, pid, api, op, 0, 0, dev, size, addr, 0, result)
s = socket.socket(fileno=fd)
s.send(ev(0, 9, -1, 0, 0))
for i, size in enumerate([{}]):
    s.send(ev(2, 0, -1, size, 0x100000 * (i + 1)))
time.sleep(0.4)
"#,
        list.join(", ")
    )
}

fn recording(dir: &Path, name: &str, sizes: &[u64]) -> PathBuf {
    let lib = dir.join("libgpuledger_tracer.so");
    std::fs::write(&lib, "").unwrap();
    let ledger = dir.join(name);
    let out = record_job(None, "50ms", &ledger, &["python3", "-c", &job(sizes)])
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

fn pinned_findings(ledger: &Path) -> Vec<serde_json::Value> {
    let doc = json_of(&["show", ledger.to_str().unwrap(), "--json"], 0);
    let all = doc["findings"].as_array().cloned().unwrap_or_default();
    all.into_iter()
        .filter(|f| f["kind"] == "pinned_rounding")
        .collect()
}

#[test]
fn rounded_pinned_blocks_are_named_and_ordinary_batches_are_not() {
    const GIB: u64 = 1 << 30;
    let tmp = tempfile::tempdir().unwrap();
    // Rows of 1.6 and 3.1 GiB, each pinned as the next power of two.
    let rounded = recording(
        tmp.path(),
        "rounded.ledger",
        &[2 * GIB, 2 * GIB, 4 * GIB, 4 * GIB],
    );
    let found = pinned_findings(&rounded);
    assert_eq!(found.len(), 1, "{found:?}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "PYTORCH_ALLOC_CONF=pinned_max_round_threshold_mb:1,pinned_max_cached_size_mb:1"
        ),
        "{message}"
    );
    assert_eq!(found[0]["severity"], "warning");
    assert!(found[0]["t_s"].as_f64().unwrap() < 60.0, "{found:?}");
    let text = stdout_of(&["show", rounded.to_str().unwrap()], 0);
    assert!(text.contains("pinned_rounding"), "{text}");

    // 64 images of 3×224×224 fp32 per batch, 40 batches pinned: 1.4 GiB, never a power of two.
    let batch = 64 * 3 * 224 * 224 * 4;
    let loader = recording(tmp.path(), "loader.ledger", &vec![batch; 40]);
    assert!(pinned_findings(&loader).is_empty());
}
