//! `evicted_to_host`: amdgpu VRAM contents living in host RAM on the process's own device.
//!
//! ref: drivers/gpu/drm/amd/amdgpu/amdgpu_fdinfo.c: total/shared under the preferred placement,
//! resident under the actual one, plus `amd-evicted-vram`.

use super::{Finding, Kind, Severity};
use crate::ledger::Ledger;
use crate::units::human_bytes;
use std::collections::BTreeMap;

/// Per-process device-local sums above the device's own `mem_info_vram_used` (+5 %, +16 MiB).
pub(super) fn over_reported(ledger: &Ledger) -> Vec<Finding> {
    ledger
        .devices
        .iter()
        .filter_map(|d| {
            let used = d.vram_used?;
            let sum: u64 = ledger.processes.iter().map(|p| p.resident(&d.id, crate::ledger::MemClass::Device)).sum();
            (sum as f64 > used as f64 * 1.05 + (16u64 << 20) as f64).then(|| Finding {
                kind: Kind::OverReported,
                severity: Severity::Warning,
                message: format!(
                    "per-process VRAM on {} sums to {} but the device reports {} in use: some buffers are counted under several processes or the per-process numbers are off; trust the device total; see --explain over_reported",
                    d.id,
                    human_bytes(sum),
                    human_bytes(used)
                ),
                pid: None,
                rank: None,
                device: Some(d.id.clone()),
                peer: None,
                bytes: sum,
                ratio: Some(sum as f64 / used.max(1) as f64),
                backing: None,
                source: Some("mem_info_vram_used".into()),
                issue: None,
            })
        })
        .collect()
}

pub(super) fn find(ledger: &Ledger) -> Vec<Finding> {
    let mut by: BTreeMap<(u32, &str), u64> = BTreeMap::new();
    for c in ledger
        .clients
        .iter()
        .filter(|c| c.driver.as_deref() == Some("amdgpu"))
    {
        let gtt = c.regions.get("gtt");
        let over = gtt
            .and_then(|g| Some(g.resident_bytes()?.saturating_sub(g.total?)))
            .unwrap_or(0);
        let evicted = c.evicted_vram.unwrap_or(0).max(over);
        if evicted > 0 {
            *by.entry((c.owner, &c.device)).or_default() += evicted;
        }
    }
    by.into_iter()
        .map(|((pid, device), bytes)| {
            let row = ledger.processes.iter().find(|p| p.pid == pid);
            let who = row.map(|r| r.label()).unwrap_or_else(|| format!("pid {pid}"));
            Finding {
                kind: Kind::EvictedToHost,
                severity: Severity::Warning,
                message: format!(
                    "{who} has {} of VRAM-preferred buffers evicted to host RAM on its own device {device}: VRAM is oversubscribed, not mirrored; reduce the working set; see --explain evicted_to_host",
                    human_bytes(bytes)
                ),
                pid: Some(pid),
                rank: row.and_then(|r| r.rank),
                device: Some(device.to_string()),
                peer: None,
                bytes,
                ratio: None,
                backing: None,
                source: Some("amd-evicted-vram".into()),
                issue: None,
            }
        })
        .collect()
}
