//! `evicted_to_host`: amdgpu VRAM contents living in host RAM on the process's own device.
//!
//! ref: drivers/gpu/drm/amd/amdgpu/amdgpu_fdinfo.c: total/shared under the preferred placement,
//! resident under the actual one, plus `amd-evicted-vram`.

use super::{Finding, Kind, Severity};
use crate::ledger::Ledger;
use crate::units::human_bytes;
use std::collections::BTreeMap;

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
            }
        })
        .collect()
}
