//! `doctor` on simulated machines: 2 and 4 visible Battlemage GPUs, compute-runtime 26.05 vs
//! 26.22 (written as a dpkg status file, which doctor reads in a capture tree because
//! `system_info` asks package managers only on the live machine), device masks, the debug-key
//! workaround, PCI topology and the host RAM outlook.

use crate::common;
use common::*;
use std::path::Path;
use std::process::Output;

/// A simulated machine: `ranks` B70s, `backing` pinned (pinned mirrors) or registered-only, with
/// intel-opencl-icd `version` installed, 8 s into the run: four pinned ranks exhaust the 64 GiB
/// host later and a dead job leaves no process to carry the finding.
fn machine(dir: &Path, ranks: u32, backing: &str, version: &str) -> String {
    let out = dir.join(format!("sim-{ranks}-{backing}-{version}"));
    let tree = out.to_str().unwrap().to_string();
    let r = ranks.to_string();
    stdout_of(
        &[
            "simulate",
            "ddp-peer-mirror",
            "--ranks",
            &r,
            "--backing",
            backing,
            "--at",
            "8s",
            "--out",
            &tree,
        ],
        0,
    );
    std::fs::create_dir_all(out.join("var/lib/dpkg")).unwrap();
    std::fs::write(
        out.join("var/lib/dpkg/status"),
        format!(
            "Package: intel-opencl-icd\nStatus: install ok installed\nVersion: {version}-0\n\n\
             Package: libigc2\nStatus: install ok installed\nVersion: 2.36.3\n"
        ),
    )
    .unwrap();
    tree
}

/// Runs doctor with an environment of exactly `env`.
fn doctor(tree: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = bin();
    cmd.env_clear().args(["doctor", "--root", tree]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn severity_of(report: &serde_json::Value, id: &str) -> Option<String> {
    report["known_issues"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .map(|m| m["severity"].as_str().unwrap().to_string())
}

fn reason_of(report: &serde_json::Value, id: &str) -> String {
    report["known_issues"]["not_matched"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .map(|m| m["reason"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

const C953: &str = "cr-953-bmg-eager-peer-pinning";
const C952: &str = "cr-952-bmg-4x-b60-out-of-resources";

#[test]
fn runtime_26_22_against_26_05_on_two_and_four_gpus() {
    let dir = tempfile::tempdir().unwrap();
    // (ranks, backing, version, cr-953 severity, cr-952 severity)
    let cases = [
        (2, "pinned", "26.22.38646.4", Some("critical"), None),
        (2, "registered-only", "26.22.38646.4", Some("warning"), None),
        (2, "pinned", "26.05.37020.3", None, None),
        (
            4,
            "pinned",
            "26.22.38646.4",
            Some("critical"),
            Some("critical"),
        ),
        (4, "pinned", "26.05.37020.3", None, None),
    ];
    for (ranks, backing, version, s953, s952) in cases {
        let tree = machine(dir.path(), ranks, backing, version);
        let out = doctor(&tree, &["--json"], &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = json(&out);
        let what = format!("{ranks} {backing} {version}");
        assert_eq!(r["schema"], "gpuledger.doctor/1");
        assert_eq!(
            r["versions"][0]["component"], "intel-compute-runtime",
            "{what}"
        );
        assert_eq!(
            r["devices"].as_array().unwrap().len(),
            ranks as usize,
            "{what}"
        );
        assert_eq!(severity_of(&r, C953).as_deref(), s953, "{what}");
        assert_eq!(severity_of(&r, C952).as_deref(), s952, "{what}");
        if version.starts_with("26.05") {
            assert!(
                reason_of(&r, C953).contains("outside the affected range"),
                "{what}"
            );
        }
        if ranks == 2 {
            assert!(
                reason_of(&r, C952).contains("needs 4"),
                "{what}: {}",
                reason_of(&r, C952)
            );
        }
    }
}

#[test]
fn fail_on_follows_the_worst_match() {
    let dir = tempfile::tempdir().unwrap();
    let pinned = machine(dir.path(), 2, "pinned", "26.22.38646.4");
    let registered = machine(dir.path(), 2, "registered-only", "26.22.38646.4");
    let old = machine(dir.path(), 2, "registered-only", "26.05.37020.3");
    for (tree, level, code) in [
        (&pinned, "critical", 3),
        (&registered, "critical", 0),
        (&registered, "warning", 3),
        (&old, "warning", 3), // reports of the SYCL-context mirror reach back to 26.05
    ] {
        let out = doctor(tree, &["--fail-on", level], &[]);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{tree} {level}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn the_jobs_masks_and_workaround_decide() {
    let dir = tempfile::tempdir().unwrap();
    let tree = machine(dir.path(), 4, "pinned", "26.22.38646.4");
    let job = ["--json", "--", "torchrun", "--nproc-per-node=4", "train.py"];
    let r = json(&doctor(
        &tree,
        &job,
        &[("ZE_AFFINITY_MASK", "0"), ("HOME", "/nonexistent")],
    ));
    assert_eq!(r["job"]["env"]["ZE_AFFINITY_MASK"], "0");
    assert!(
        r["job"]["env"].get("HOME").is_none(),
        "only allow-listed variables"
    );
    assert_eq!(r["job"]["visible"]["8086"], serde_json::json!([1, 4]));
    assert_eq!(
        r["known_issues"]["matches"].as_array().unwrap().len(),
        0,
        "{r:#}"
    );
    assert!(reason_of(&r, C953).contains("1 visible to the job (ZE_AFFINITY_MASK=0)"));

    let r = json(&doctor(
        &tree,
        &job,
        &[("ONEAPI_DEVICE_SELECTOR", "level_zero:0,1")],
    ));
    assert_eq!(severity_of(&r, C953).as_deref(), Some("critical"));
    assert_eq!(severity_of(&r, C952), None, "two of four visible");

    let debug = [("NEOReadDebugKeys", "1"), ("EnableDeferBacking", "0")];
    let r = json(&doctor(&tree, &job, &debug));
    assert_eq!(severity_of(&r, C953), None);
    assert!(reason_of(&r, C953).starts_with("workaround in effect"));

    // Without `-- CMD` the shell's environment is not the job's: the machine is judged.
    let r = json(&doctor(&tree, &["--json"], &[("ZE_AFFINITY_MASK", "0")]));
    assert!(r["job"].is_null());
    assert_eq!(severity_of(&r, C953).as_deref(), Some("critical"));
}

#[test]
fn host_ram_outlook_at_the_jobs_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    let tree = machine(dir.path(), 4, "registered-only", "26.22.38646.4");
    let gib = 1u64 << 30;
    let args = [
        "--json",
        "--vram-per-rank",
        "16GiB",
        "--",
        "torchrun",
        "--nproc_per_node",
        "4",
        "t.py",
    ];
    let r = json(&doctor(&tree, &args, &[]));
    let h = &r["host"];
    assert_eq!(h["ranks"], 4);
    assert_eq!(h["peers_each"], 3);
    assert_eq!(h["needed"].as_u64(), Some(4 * 3 * 16 * gib));
    assert_eq!(h["fits"], false, "192 GiB on the simulated 64 GiB host");
    let total = h["mem_total"].as_u64().unwrap();
    assert_eq!(h["largest_per_rank_that_fits"].as_u64(), Some(total / 12));
    let text = String::from_utf8(doctor(&tree, &args[1..], &[]).stdout).unwrap();
    assert!(
        text.contains("4 × 3 × 16.0 GiB = 192.0 GiB of pinned host RAM"),
        "{text}"
    );
    assert!(text.contains("does not fit"), "{text}");
    // No launcher flag: one rank per visible GPU.
    let r = json(&doctor(&tree, &["--json"], &[]));
    assert_eq!(r["host"]["ranks"], 4);
    assert!(r["host"]["ranks_basis"]
        .as_str()
        .unwrap()
        .starts_with("one rank per visible GPU"));
}

#[test]
fn root_ports_from_sysfs_links() {
    let dir = tempfile::tempdir().unwrap();
    let tree = machine(dir.path(), 2, "registered-only", "26.22.38646.4");
    let base = Path::new(&tree);
    let r = json(&doctor(&tree, &["--json"], &[]));
    assert!(r["devices"][0]["root_port"].is_null());
    assert!(reason_of(&r, "cr-935-bmg-cross-root-port-p2p").contains("not known"));
    // Each GPU behind its own root port, the second one behind a switch.
    let places = [
        ("0000:03:00.0", "pci0000:00/0000:00:01.0/0000:03:00.0"),
        (
            "0000:04:00.0",
            "pci0000:00/0000:00:1c.0/0000:01:00.0/0000:02:00.0/0000:04:00.0",
        ),
    ];
    std::fs::create_dir_all(base.join("sys/bus/pci/devices")).unwrap();
    for (slot, path) in places {
        std::fs::create_dir_all(base.join("sys/devices").join(path)).unwrap();
        std::os::unix::fs::symlink(
            format!("../../../devices/{path}"),
            base.join("sys/bus/pci/devices").join(slot),
        )
        .unwrap();
    }
    let r = json(&doctor(&tree, &["--json"], &[]));
    assert_eq!(r["devices"][0]["root_port"], "0000:00:01.0");
    assert_eq!(r["devices"][1]["root_port"], "0000:00:1c.0");
    assert_eq!(
        r["devices"][1]["switch_path"],
        serde_json::json!(["0000:01:00.0", "0000:02:00.0"])
    );
    assert_eq!(
        severity_of(&r, "cr-935-bmg-cross-root-port-p2p").as_deref(),
        Some("warning")
    );
    assert!(r["p2p"]
        .as_str()
        .unwrap()
        .contains("2 different root ports"));
    let text = String::from_utf8(doctor(&tree, &[], &[]).stdout).unwrap();
    assert!(text.contains("0000:00:1c.0"), "{text}");
}

/// Issue 24: doctor on a tree whose snapshot has three CRITICAL findings said "none applies" and
/// exited 0 under `--fail-on warning`. Its verdict now holds the snapshot's findings.
#[test]
fn the_verdict_holds_the_snapshots_findings_and_fail_on_applies() {
    let seed = fixture("seed-2622");
    let seed = seed.to_str().unwrap();
    let out = doctor(seed, &["--fail-on", "warning"], &[]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    // Issue 32: the signature with no version found is cr-953, "cannot be ruled out", and the
    // report ends with the one thing to try first.
    let (_, after) = text
        .split_once("Verdict: CRITICAL: 4 finding(s), 4 critical, 0 warning, 0 info\n")
        .expect("the verdict");
    assert!(
        after.starts_with(
            "\nNext step (cr-953-bmg-eager-peer-pinning):\n  try first: Set NEOReadDebugKeys=1 \
             EnableDeferBacking=0 for the job\n"
        ),
        "{after}"
    );
    assert!(
        after.contains("measure it: gpuledger experiment --controls no-defer-backing --"),
        "{after}"
    );
    assert_eq!(text.matches("CRITICAL peer_mirror").count(), 2, "{text}");
    assert_eq!(text.matches("CRITICAL known_issue").count(), 1, "{text}");
    assert!(!text.contains("none applies"), "{text}");
    let snapshot = json_of(&["--root", seed, "--json"], 0);
    let doc = json(&doctor(seed, &["--json"], &[]));
    assert_eq!(
        doc["findings"], snapshot["findings"],
        "the snapshot's findings"
    );
    let healthy = fixture("xe-two-tile");
    let out = doctor(healthy.to_str().unwrap(), &["--fail-on", "warning"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("Verdict: OK, no findings\n"));
}

/// Issue 32: the version of what the job loaded (its `proc/PID/maps`, the file's dpkg package)
/// decides over the other runtime installed beside it.
#[test]
fn the_runtime_the_job_loaded_decides_the_version() {
    let (_tmp, tree) = fixture_copy("seed-2622");
    let lib = "/usr/lib/x86_64-linux-gnu/libze_intel_gpu.so.1.13.38646";
    let maps = format!(
        "7f2a1c000000-7f2a1c4a0000 r-xp 00000000 103:02 2102233    {lib}\n\
         7f2a1e000000-7f2a1e001000 rw-s 00000000 00:06 1025    /dev/dri/renderD128\n"
    );
    std::fs::write(tree.join("proc/116400/maps"), maps).unwrap();
    let info = tree.join("var/lib/dpkg/info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(
        tree.join("var/lib/dpkg/status"),
        "Package: libze-intel-gpu1\nStatus: install ok installed\nVersion: 26.22.38646.4-0ubuntu1\n\n\
         Package: intel-level-zero-gpu\nStatus: install ok installed\nVersion: 26.05.37020.3-0\n",
    )
    .unwrap();
    std::fs::write(
        info.join("libze-intel-gpu1:amd64.list"),
        format!("/usr\n{lib}\n"),
    )
    .unwrap();
    std::fs::write(
        info.join("intel-level-zero-gpu.list"),
        "/opt/old/libze_intel_gpu.so.1\n",
    )
    .unwrap();
    let r = json(&doctor(tree.to_str().unwrap(), &["--json"], &[]));
    let loaded = r["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["loaded_by"] == 116400)
        .expect("a version from the loaded library");
    assert_eq!(loaded["version"], "26.22.38646.4-0ubuntu1");
    assert_eq!(
        loaded["source"],
        format!("{lib} loaded by pid 116400, from package libze-intel-gpu1")
    );
    let top = &r["known_issues"]["matches"][0];
    assert_eq!(top["id"], "cr-953-bmg-eager-peer-pinning");
    assert_eq!(top["version"], "in_introduced_range");
    assert_eq!(r["known_issues"]["next_step"]["issue"], top["id"]);
}
