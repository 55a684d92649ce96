//! The snapshot command on capture-tree fixtures built from real fdinfo samples.

use crate::common;
use common::*;
use serde_json::Value;

#[test]
fn table_golden_for_every_fixture() {
    for (name, out) in fixture_snapshots(&[]) {
        assert_golden(&format!("{name}.txt"), &out);
    }
}

fn snapshot(name: &str) -> Value {
    let root = fixture(name);
    json_of(&["--root", root.to_str().unwrap(), "--json"], 0)
}

#[test]
fn json_golden_seed_2622() {
    let mut doc = snapshot("seed-2622");
    doc["time"] = Value::String("TIME".into());
    doc["root"] = Value::String("ROOT".into());
    assert_golden(
        "seed-2622.json",
        &(serde_json::to_string_pretty(&doc).unwrap() + "\n"),
    );
}

#[test]
fn seed_2605_mirror_is_bookkeeping_only() {
    let doc = snapshot("seed-2605");
    let mirrors = findings_of(&doc, "peer_mirror");
    assert_eq!(mirrors.len(), 2);
    for f in &mirrors {
        assert_eq!(f["backing"], "not_pinned");
        assert_eq!(f["severity"], "info");
        assert_eq!(f["source"], "GPUActive");
    }
    let r0 = mirrors.iter().find(|f| f["rank"] == 0).unwrap();
    assert_eq!(r0["pid"], 116400);
    assert_eq!(r0["device"], "0000:03:00.0");
    assert_eq!(r0["peer"], "0000:04:00.0");
    assert_eq!(r0["bytes"], 8913000u64 * 1024);
    assert!(
        findings_of(&doc, "driver_held_host").is_empty(),
        "0.67 GiB is below the 5 % floor"
    );
}

#[test]
fn seed_2622_mirror_is_pinned_and_critical() {
    let doc = snapshot("seed-2622");
    let mirrors = findings_of(&doc, "peer_mirror");
    assert_eq!(mirrors.len(), 2);
    assert!(mirrors
        .iter()
        .all(|f| f["backing"] == "pinned" && f["severity"] == "critical"));
    let r1 = mirrors.iter().find(|f| f["rank"] == 1).unwrap();
    assert_eq!(r1["bytes"], 9011816u64 * 1024);
    assert_eq!(r1["peer"], "0000:03:00.0");
    let held = findings_of(&doc, "driver_held_host");
    assert_eq!(held.len(), 1);
    assert_eq!(held[0]["bytes"], 27158118u64 * 1024);
    assert_eq!(doc["host"]["gpu_active"], 27158118u64 * 1024);
    let msg = r1["message"].as_str().unwrap();
    assert!(
        msg.contains("rank 1 (pid 116401, home 0000:04:00.0) holds 8.6 GiB"),
        "{msg}"
    );
    assert!(msg.contains("pinned (GPUActive 25.9 GiB)"), "{msg}");
}

#[test]
fn mainline_kernel_uses_unaccounted_memory_as_evidence() {
    let doc = snapshot("seed-mainline");
    assert_eq!(doc["host"]["gpu_active"], Value::Null);
    let unacc = doc["host"]["unaccounted"].as_u64().unwrap();
    assert_eq!(unacc, (27158118 + 150_000) * 1024);
    let mirrors = findings_of(&doc, "peer_mirror");
    assert!(mirrors
        .iter()
        .all(|f| f["backing"] == "pinned" && f["source"] == "unaccounted"));
    assert_eq!(
        findings_of(&doc, "driver_held_host")[0]["source"],
        "unaccounted"
    );
}

#[test]
fn ranks_and_allow_listed_environment() {
    let doc = snapshot("seed-2622");
    let procs = doc["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "torchrun holds no GPU fd");
    assert_eq!(procs[0]["rank"], 0);
    assert_eq!(procs[0]["local_rank"], 0);
    assert_eq!(procs[0]["home_device"], "0000:03:00.0");
    assert_eq!(procs[1]["home_device"], "0000:04:00.0");
    let env = procs[0]["env"].as_object().unwrap();
    assert!(env.contains_key("ZE_FLAT_DEVICE_HIERARCHY"));
    assert!(
        !env.contains_key("HOME") && !env.contains_key("HF_TOKEN"),
        "{env:?}"
    );
}

#[test]
fn healthy_single_gpu_has_no_findings() {
    let doc = snapshot("xe-two-tile");
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0);
    let usage = doc["processes"][0]["usage"].as_array().unwrap();
    let vram1 = usage.iter().find(|u| u["region"] == "vram1").unwrap();
    assert_eq!(vram1["resident"], 63753540u64 * 1024);
    assert_eq!(vram1["class"], "device");
    let system = usage.iter().find(|u| u["region"] == "system").unwrap();
    assert_eq!(system["resident"], 0, "a printed 0 is 0, not null");
    assert_eq!(system["shared"], 0);
}

#[test]
fn shared_client_counts_once() {
    let doc = snapshot("shared-client");
    let procs = doc["processes"].as_array().unwrap();
    let p500 = procs.iter().find(|p| p["pid"] == 500).unwrap();
    let vram = p500["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["region"] == "vram0")
        .unwrap();
    assert_eq!(
        vram["resident"],
        2097152u64 * 1024,
        "dup'd fd and forked child add nothing"
    );
    let p501 = procs.iter().find(|p| p["pid"] == 501).unwrap();
    assert!(p501["usage"].as_array().unwrap().is_empty());
    let c42 = doc["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client_id"] == 42)
        .unwrap();
    assert_eq!(c42["pid"], 500);
    assert_eq!(c42["holders"].as_array().unwrap().len(), 3);
}

#[test]
fn amdgpu_legacy_keys_are_resident_not_extra() {
    let doc = snapshot("amdgpu");
    let procs = doc["processes"].as_array().unwrap();
    let glx = procs.iter().find(|p| p["pid"] == 1967).unwrap();
    let gtt = glx["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["region"] == "gtt")
        .unwrap();
    assert_eq!(
        gtt["resident"],
        20u64 << 20,
        "drm-memory-gtt must not be added to drm-resident-gtt"
    );
    let xorg = procs.iter().find(|p| p["pid"] == 2201).unwrap();
    let vram = xorg["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["region"] == "vram")
        .unwrap();
    assert_eq!(
        vram["resident"],
        2068u64 * 1024,
        "old format: legacy key is the resident value"
    );
    assert_eq!(vram["total"], Value::Null, "absent numbers are null");
    let ev = findings_of(&doc, "evicted_to_host");
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["pid"], 3100);
    assert_eq!(ev[0]["bytes"], 2097152u64 * 1024);
    assert!(
        findings_of(&doc, "peer_mirror").is_empty(),
        "eviction on the own device is no mirror"
    );
}

#[test]
fn i915_and_panfrost_regions_classified() {
    let doc = snapshot("i915");
    let blender = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == 4200)
        .unwrap()
        .clone();
    let local = blender["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["region"] == "local0")
        .unwrap()
        .clone();
    assert_eq!(local["class"], "device");
    assert_eq!(local["resident"], 6043u64 << 20);
    assert_eq!(doc["devices"][1]["name"], "Intel Arc A770 (Alchemist DG2)");
    let doc = snapshot("panfrost");
    let usage = &doc["processes"][0]["usage"][0];
    assert_eq!(usage["region"], "memory");
    assert_eq!(usage["class"], "host");
    assert_eq!(usage["resident"], 36496u64 * 1024);
    assert_eq!(usage["purgeable"], 128u64 * 1024);
    assert_eq!(doc["devices"][0]["id"], "fde60000.gpu");
    assert_eq!(doc["devices"][0]["driver"], "panfrost");
    assert_eq!(doc["processes"][0]["home_device"], "fde60000.gpu");
}

#[test]
fn fail_on_exits_3_only_when_severity_reached() {
    let r = |name: &str| fixture(name).to_str().unwrap().to_string();
    assert_eq!(
        run(&["--root", &r("seed-2622"), "--fail-on", "critical"])
            .status
            .code(),
        Some(3)
    );
    assert_eq!(
        run(&["--root", &r("seed-2605"), "--fail-on", "warning"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        run(&["--root", &r("amdgpu"), "--fail-on", "warning"])
            .status
            .code(),
        Some(3)
    );
    assert_eq!(
        run(&["--root", &r("amdgpu"), "--fail-on", "critical"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        run(&["--root", &r("xe-two-tile"), "--fail-on", "warning"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn thresholds_are_configurable() {
    let root = fixture("seed-2605");
    let doc = json_of(
        &[
            "--root",
            root.to_str().unwrap(),
            "--json",
            "--threshold",
            "peer.min_bytes=10GiB",
        ],
        0,
    );
    assert!(findings_of(&doc, "peer_mirror").is_empty());
    let out = run(&[
        "--root",
        root.to_str().unwrap(),
        "--threshold",
        "peer.bogus=1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown threshold \"peer.bogus\""));
}

#[test]
fn explain_and_errors_name_the_problem() {
    let text = stdout_of(&["--explain", "peer_mirror"], 0);
    assert!(text.contains("EnableDeferBacking=0"));
    let out = run(&["--explain", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values: peer_mirror"));
    let out = run(&["--root", "/no/such/capture"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/no/such/capture") && err.contains("--root"),
        "{err}"
    );
}

#[test]
fn one_process_over_two_devices_mirrors_on_each() {
    let doc = snapshot("b70-one-process");
    let mirrors = findings_of(&doc, "peer_mirror");
    let peers: Vec<(&str, &str)> = mirrors
        .iter()
        .map(|f| (f["peer"].as_str().unwrap(), f["device"].as_str().unwrap()))
        .collect();
    assert_eq!(
        peers,
        [
            ("0000:03:00.0", "0000:04:00.0"),
            ("0000:04:00.0", "0000:03:00.0")
        ]
        .iter()
        .copied()
        .filter(|p| peers.contains(p))
        .collect::<Vec<_>>()
    );
    assert_eq!(mirrors.len(), 2, "{mirrors:?}");
    assert!(mirrors.iter().all(|f| f["pid"] == 7100
        && f["severity"] == "critical"
        && f["source"] == "nr_gpu_active"));
}

/// The owning-card shape is its own kind: no peer holds it, and a warning at most (pinned here:
/// GPUActive covers it).
#[test]
fn same_sized_gtt_on_the_owning_card_is_an_own_card_mirror_not_a_peer_mirror() {
    let doc = snapshot("b70-owning-card");
    assert!(findings_of(&doc, "peer_mirror").is_empty(), "{doc}");
    let own = findings_of(&doc, "own_card_mirror");
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0]["device"], "0000:03:00.0");
    assert_eq!(own[0]["peer"], serde_json::Value::Null);
    assert_eq!(
        (&own[0]["severity"], &own[0]["backing"]),
        (&"warning".into(), &"pinned".into())
    );
    let msg = own[0]["message"].as_str().unwrap();
    assert!(msg.contains("on its own card 0000:03:00.0"), "{msg}");
    assert!(msg.contains("see --explain own_card_mirror"), "{msg}");
    let explain = stdout_of(&["--explain", "own_card_mirror"], 0);
    assert!(explain.starts_with("own_card_mirror: "), "{explain}");
}

#[test]
fn integrated_gpu_working_memory_is_never_a_mirror() {
    let doc = snapshot("apu-plus-dgpu");
    assert!(findings_of(&doc, "peer_mirror").is_empty(), "{doc}");
    let apu = doc["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "0000:c4:00.0")
        .unwrap();
    assert_eq!(apu["integrated"], "kfd_apu_node");
    let i915 = snapshot("i915");
    let igpu = i915["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "0000:00:02.0")
        .unwrap();
    assert_eq!(igpu["integrated"], "no_local_region");
}

#[test]
fn integrated_working_memory_is_driver_held_but_not_alarming() {
    let doc = snapshot("apu-plus-dgpu");
    let held = findings_of(&doc, "driver_held_host");
    assert_eq!(held.len(), 1);
    assert_eq!(held[0]["severity"], "info");
    let msg = held[0]["message"].as_str().unwrap();
    assert!(msg.contains("working memory of integrated GPUs"), "{msg}");
    let seed = snapshot("seed-2622");
    assert_eq!(
        findings_of(&seed, "driver_held_host")[0]["severity"],
        "critical"
    );
}

#[test]
fn xe_tile_vram_is_the_capacity_and_dmem_does_not_add_to_it() {
    // b70-one-process: tile0/physical_vram_size_bytes on one card, tile0/memory/… on the other.
    let doc = snapshot("b70-one-process");
    for d in doc["devices"].as_array().unwrap() {
        assert_eq!(d["local_total"], 32u64 << 30, "{d}");
        assert_eq!(d["memory"][0]["region"], "vram0");
        assert_eq!(d["memory"][0]["used"], Value::Null, "xe states no use");
    }
    // xe-suspended: dmem.capacity only (12 GiB), the tile file absent.
    let doc = snapshot("xe-suspended");
    assert_eq!(doc["devices"][0]["local_total"], 12u64 << 30);
    let table = stdout_of(&["--root", fixture("b70-one-process").to_str().unwrap()], 0);
    assert!(table.contains("- / 32.0 GiB"), "{table}");
}
