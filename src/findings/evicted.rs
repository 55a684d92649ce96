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
                device: Some(d.id.clone()),
                bytes: sum,
                ratio: Some(sum as f64 / used.max(1) as f64),
                source: Some("mem_info_vram_used".into()),
                ..Finding::new(
                    Kind::OverReported,
                    Severity::Warning,
                    format!(
                        "per-process VRAM on {} sums to {} but the device reports {} in use: some buffers are counted under several processes or the per-process numbers are off; trust the device total; see --explain over_reported",
                        d.id,
                        human_bytes(sum),
                        human_bytes(used)
                    ),
                )
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
            let message = format!(
                "{who} has {} of VRAM-preferred buffers evicted to host RAM on its own device {device}: VRAM is oversubscribed, not mirrored; reduce the working set; see --explain evicted_to_host",
                human_bytes(bytes)
            );
            Finding {
                pid: Some(pid),
                rank: row.and_then(|r| r.rank),
                device: Some(device.to_string()),
                bytes,
                source: Some("amd-evicted-vram".into()),
                ..Finding::new(Kind::EvictedToHost, Severity::Warning, message)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::fixture::{client, host, ledger, process, GIB};
    use crate::ledger::MemClass;

    const A: &str = "0000:03:00.0";

    fn evicting(driver: &str, evicted: Option<u64>) -> Ledger {
        let p = process(10, Some(3), &[(A, MemClass::Device, 8 * GIB)]);
        let mut c = client(10, A, driver, &[("vram", 8 * GIB)]);
        c.evicted_vram = evicted;
        ledger(&[A], vec![p], vec![c], host(0, 32 * GIB))
    }

    #[test]
    fn amdgpu_evicted_vram_is_evicted_to_host_on_its_own_device() {
        let found = find(&evicting("amdgpu", Some(2 * GIB)));
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(
            (f.kind, f.pid, f.rank, f.device.as_deref(), f.bytes),
            (Kind::EvictedToHost, Some(10), Some(3), Some(A), 2 * GIB)
        );
    }

    #[test]
    fn no_eviction_or_another_driver_is_no_finding() {
        assert_eq!(find(&evicting("amdgpu", None)), Vec::new());
        assert_eq!(find(&evicting("amdgpu", Some(0))), Vec::new());
        assert_eq!(find(&evicting("i915", Some(2 * GIB))), Vec::new());
    }

    fn reported(used: u64) -> Ledger {
        let mut l = evicting("amdgpu", None);
        l.devices[0].vram_used = Some(used);
        l
    }

    #[test]
    fn per_process_vram_above_the_device_total_is_over_reported() {
        let found = over_reported(&reported(2 * GIB));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].kind, found[0].device.as_deref(), found[0].bytes),
            (Kind::OverReported, Some(A), 8 * GIB)
        );
        assert_eq!(found[0].ratio, Some(4.0));
    }

    #[test]
    fn per_process_vram_within_the_device_total_is_not_over_reported() {
        assert_eq!(over_reported(&reported(8 * GIB)), Vec::new());
        assert_eq!(over_reported(&Ledger::default()), Vec::new());
    }
}
