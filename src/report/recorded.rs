//! The machine a recording was made on, from the recording itself (its `meta` and `devices`):
//! what `report` describes when it is given recordings and no `--root`, and how the machine the
//! report is made on differs from it.

use crate::ledger::{HeldCounter, HostTotals, Ledger};
use crate::recording::Recording;
use crate::sources::system_info::SystemInfo;
use std::collections::BTreeMap;

fn json_map(rec: &Recording, key: &str) -> BTreeMap<String, String> {
    rec.meta
        .get(key)
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

/// The recorded machine's facts: kernel, distribution, host name, driver and package versions
/// as the recording kept them (what it did not keep stays "not found").
pub fn system(rec: &Recording) -> SystemInfo {
    let driver_versions = json_map(rec, "driver_versions");
    let packages = json_map(rec, "packages");
    SystemInfo {
        kernel: rec.meta.get("kernel").cloned(),
        distro: rec.meta.get("distro").cloned(),
        hostname: rec
            .meta
            .get("hostname")
            .or_else(|| rec.meta.get("label.node"))
            .cloned(),
        nvidia: driver_versions.get("nvidia").cloned(),
        packages_source: (!packages.is_empty()).then(|| "the recording".to_string()),
        packages,
        python: json_map(rec, "python"),
        driver_versions,
        ..SystemInfo::default()
    }
}

/// A ledger holding the recorded devices and which GPU page counter the recording saw (processes
/// and host totals are in the recording's own section of the report, over time).
pub fn ledger(rec: &Recording) -> Ledger {
    let counter = rec
        .host
        .driver_held_peak
        .map(|d| d.counter)
        .filter(|c| *c != HeldCounter::Unaccounted);
    Ledger {
        time_ms: rec.host.last_ms,
        root: rec.meta.get("root").cloned().unwrap_or_default(),
        devices: rec.devices.clone(),
        host: HostTotals {
            mem_total: rec.host.mem_total,
            gpu_active: counter.and(rec.host.gpu_active_peak),
            gpu_active_source: counter.map(|c| c.as_str().to_string()),
            ..HostTotals::default()
        },
        ..Ledger::default()
    }
}

/// How the machine the report is made on differs from the recorded one, one phrase each:
/// host name, kernel, GPUs. Empty when they match (or the recording did not say).
pub fn differences(
    rec: &Recording,
    recorded: &SystemInfo,
    here: &SystemInfo,
    here_ledger: &Ledger,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut differ = |what: &str, there: Option<&str>, now: Option<&str>| {
        if let (Some(a), Some(b)) = (there, now) {
            if a.trim() != b.trim() {
                out.push(format!("{what} {b} here, {a} recorded"));
            }
        }
    };
    differ(
        "host",
        recorded.hostname.as_deref(),
        here.hostname.as_deref(),
    );
    differ("kernel", recorded.kernel.as_deref(), here.kernel.as_deref());
    let gpus = |l: &[crate::sources::drm_devices::DeviceInfo]| -> Vec<String> {
        l.iter()
            .map(|d| {
                format!("{} {}", d.id, d.name.as_deref().unwrap_or(""))
                    .trim()
                    .to_string()
            })
            .collect()
    };
    let (there, now) = (gpus(&rec.devices), gpus(&here_ledger.devices));
    if there != now {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        out.push(format!(
            "GPUs {} here, {} recorded",
            list(&now),
            list(&there)
        ));
    }
    out
}

/// The sentence under the report's heading: which machine the report describes and, when the
/// machine it is made on differs, how.
pub fn note(name: &str, recorded: &SystemInfo, differences: &[String]) -> String {
    let host = recorded
        .hostname
        .as_deref()
        .unwrap_or("a machine that did not record its name");
    let mut s = format!(
        "This report describes the machine the recording {name} was made on ({host}), from the recording's own facts"
    );
    if differences.is_empty() {
        s.push_str("; the machine it was written on matches it (host, kernel, GPUs).");
    } else {
        s.push_str(&format!(
            ". Warning: the machine it was written on differs: {}.",
            differences.join("; ")
        ));
    }
    s
}
