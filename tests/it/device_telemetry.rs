//! Device telemetry (issue 35 item 2): what simulated xe and NVIDIA machines' hwmon, sysfs and
//! NVML files say, in the table, the JSON, the metrics and a capture read back.

use crate::common;
use common::*;

fn sim(scenario: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let tree = dir.join(scenario);
    stdout_of(&["simulate", scenario, "--out", tree.to_str().unwrap()], 0);
    tree
}

#[test]
fn xe_cards_show_temperature_energy_clock_and_link() {
    let dir = tempfile::tempdir().unwrap();
    let tree = sim("ddp-peer-mirror", dir.path());
    let t = tree.to_str().unwrap();
    let doc = json_of(&["--root", t, "--json"], 0);
    let tel = &doc["devices"][0]["telemetry"];
    assert_eq!(tel["temperature_mc"], 58_000, "{doc:#}");
    assert_eq!(tel["energy_uj"], 9_000_000_000u64);
    assert_eq!(tel["clock_mhz"], 2_400);
    assert_eq!(tel["link_speed"], "16.0 GT/s PCIe");
    assert!(tel.get("power_uw").is_none(), "xe gives energy, not power");
    let text = bin()
        .args(["--root", t])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let row = text
        .lines()
        .skip_while(|l| !l.starts_with("Device telemetry"))
        .find(|l| l.trim_start().starts_with("0000:03:00.0"))
        .unwrap_or_else(|| panic!("{text}"));
    for cell in [
        "58 °C",
        "9.0 kJ used",
        "1400 RPM",
        "2400 / 2800 MHz",
        "16.0 GT/s PCIe x16",
    ] {
        assert!(row.contains(cell), "{cell} not in {row}");
    }
    // A capture of the tree carries the same files.
    let archive = dir.path().join("cap.tar.zst");
    stdout_of(
        &["--root", t, "capture", "-o", archive.to_str().unwrap()],
        0,
    );
    let back = json_of(&["--root", archive.to_str().unwrap(), "--json"], 0);
    assert_eq!(back["devices"][0]["telemetry"], *tel);
}

#[test]
fn nvidia_gpus_show_power_utilisation_and_modes_in_text_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let tree = sim("nvidia-ddp", dir.path());
    let text = bin()
        .args(["--root", tree.to_str().unwrap()])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    for cell in [
        "310 W / 700 W",
        "Gen 5 x16",
        "87 %",
        "persistence on, MIG off",
    ] {
        assert!(text.contains(cell), "{cell} not in {text}");
    }
    let server = serve_root(&tree, &[]);
    let m = server.get("/metrics");
    for line in [
        "gpuledger_device_temperature_celsius{device=\"0000:18:00.0\"} 41.0",
        "gpuledger_device_power_watts{device=\"0000:18:00.0\"} 310.0",
        "gpuledger_device_utilization_ratio{device=\"0000:18:00.0\"} 0.87",
        "gpuledger_device_clock_hertz{device=\"0000:18:00.0\"} 1980000000.0",
    ] {
        assert!(m.lines().any(|l| l == line), "{line} not in\n{m}");
    }
    // What NVML does not give has no series at all (no fan on these parts).
    assert!(!m.contains("gpuledger_device_fan_rpm{"), "{m}");
    drop(server);
    let report = dir.path().join("r.md");
    let r = report.to_str().unwrap();
    stdout_of(&["--root", tree.to_str().unwrap(), "report", "-o", r], 0);
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(
        md.contains("| NVIDIA persistence mode | on (2 GPUs) |"),
        "{md}"
    );
    assert!(md.contains("| MIG mode | off (2 GPUs) |"), "{md}");
}

#[test]
fn a_machine_without_telemetry_prints_no_telemetry_table() {
    let out = stdout_of(&["--root", fixture("seed-2622").to_str().unwrap()], 0);
    assert!(!out.contains("Device telemetry"), "{out}");
}
