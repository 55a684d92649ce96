//! Issue 33: the residual explained where the kernel explains it. The TTM pool (`GPUReclaim`,
//! reclaimable) is named in every view and never counted as driver-held; a GPU page counter
//! above MemTotal is a kernel counter fault, shown and never used.

use crate::common::*;
use std::path::Path;

const KIB: u64 = 1024;

/// The amdgpu fixture with meminfo's `GPUReclaim` (and `GPUActive` when given) set, MemFree
/// lowered by the pool so the other counters still add up.
fn tree_with(dir: &Path, reclaim_kb: u64, active_kb: Option<u64>) -> String {
    let tree = dir.join("t");
    copy_fixture("amdgpu-meminfo", &tree);
    let path = tree.join("proc/meminfo");
    let text = std::fs::read_to_string(&path).unwrap();
    let free = 57_958_864u64.saturating_sub(reclaim_kb.min(57_000_000));
    let text = text
        .replace(
            "MemFree:        57958864 kB",
            &format!("MemFree: {free} kB"),
        )
        .replace(
            "GPUReclaim:            0 kB",
            &format!("GPUReclaim: {reclaim_kb} kB"),
        );
    let text = match active_kb {
        Some(a) => text.replace("GPUActive:       3200000 kB", &format!("GPUActive: {a} kB")),
        None => text,
    };
    std::fs::write(&path, text).unwrap();
    tree.to_str().unwrap().to_string()
}

fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// AvengeMedia/dgop#38's pool: GPUReclaim 24407784 kB on a 7.1.1 desktop.
#[test]
fn the_ttm_pool_is_named_reclaimable_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), 24_407_784, None);
    let text = words(&String::from_utf8(run(&["--root", &tree]).stdout).unwrap());
    assert!(
        text.contains(
            "driver-held 3.1 GiB (GPUActive 3.1 GiB + pinned shmem 0 B; TTM pool (GPUReclaim, \
             reclaimable, not held) 23.3 GiB; other unaccounted 97.7 MiB)"
        ),
        "{text}"
    );
    let doc = json_of(&["--root", &tree, "--json"], 0);
    let held = &doc["host"]["driver_held"];
    assert_eq!(held["bytes"], 3_200_000 * KIB);
    assert_eq!(held["reclaimable_pool"], 24_407_784 * KIB);
    assert_eq!(held["other_unaccounted"], 100_000 * KIB);
    assert!(doc["host"]["counter_faults"].as_array().unwrap().is_empty());
}

/// dgop#44: GPUReclaim above MemTotal (7.2.5); GPUActive above it likewise.
#[test]
fn a_counter_above_mem_total_is_a_fault_not_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), 67_108_865, None);
    let text = words(&String::from_utf8(run(&["--root", &tree]).stdout).unwrap());
    assert!(
        text.contains(
            "kernel counter fault: GPUReclaim 64.0 GiB exceeds MemTotal 64.0 GiB, which no \
             counter can; not used"
        ),
        "{text}"
    );
    assert!(!text.contains("TTM pool"), "{text}");
    let doc = json_of(&["--root", &tree, "--json"], 0);
    assert_eq!(doc["host"]["counter_faults"][0]["counter"], "GPUReclaim");
    assert!(doc["host"]["driver_held"]["reclaimable_pool"].is_null());

    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), 0, Some(70_000_000));
    let doc = json_of(&["--root", &tree, "--json"], 0);
    assert_eq!(doc["host"]["counter_faults"][0]["counter"], "GPUActive");
    let held = &doc["host"]["driver_held"];
    assert_eq!(held["counter"], "unaccounted", "{held}");
    let kinds: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(!kinds.contains(&"driver_held_host"), "{kinds:?}");
}
