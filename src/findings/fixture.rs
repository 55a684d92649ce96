//! Small ledgers built in code for the rules' unit tests: a machine of a few devices, processes
//! with device-local and host-class bytes, and the host counters the rules read.

use crate::ledger::{Client, HostTotals, Ledger, MemClass, ProcessRow, Usage, UsageSource};
use crate::sources::drm_devices::DeviceInfo;
use crate::sources::drm_fdinfo::RegionStats;
use std::collections::BTreeMap;

/// 1 GiB.
pub const GIB: u64 = 1 << 30;

/// A discrete device.
pub fn device(id: &str) -> DeviceInfo {
    DeviceInfo {
        id: id.into(),
        driver: Some("amdgpu".into()),
        ..DeviceInfo::default()
    }
}

/// A process holding `(device, class, resident bytes)`, its home the device with the most
/// device-local bytes.
pub fn process(pid: u32, rank: Option<u32>, usage: &[(&str, MemClass, u64)]) -> ProcessRow {
    let home = usage
        .iter()
        .filter(|u| u.1 == MemClass::Device)
        .max_by_key(|u| u.2)
        .map(|u| u.0.to_string());
    ProcessRow {
        pid,
        nspid: Vec::new(),
        comm: "python3".into(),
        cmdline: Vec::new(),
        rank,
        local_rank: rank,
        home_device: home,
        usage: usage
            .iter()
            .map(|&(device, class, bytes)| Usage {
                device: device.into(),
                region: if class == MemClass::Device {
                    "vram"
                } else {
                    "gtt"
                }
                .into(),
                class,
                source: UsageSource::DrmFdinfo,
                total: Some(bytes),
                resident: Some(bytes),
                shared: None,
                purgeable: None,
                active: None,
            })
            .collect(),
        env: BTreeMap::new(),
        shared_with_others: Vec::new(),
        has_nvidia_fds: false,
        has_kfd_fd: false,
        cgroup: None,
        labels: Default::default(),
        engines: Vec::new(),
    }
}

/// One DRM client of `owner` on `device` with these `(region, resident bytes)`.
pub fn client(owner: u32, device: &str, driver: &str, regions: &[(&str, u64)]) -> Client {
    Client {
        device: device.into(),
        client_id: Some(u64::from(owner)),
        driver: Some(driver.into()),
        owner,
        holders: vec![(owner, 3)],
        regions: regions
            .iter()
            .map(|&(name, bytes)| {
                let stats = RegionStats {
                    total: Some(bytes),
                    resident: Some(bytes),
                    ..RegionStats::default()
                };
                (name.to_string(), stats)
            })
            .collect(),
        evicted_vram: None,
        path: "/dev/dri/renderD128".into(),
        engines: Default::default(),
    }
}

/// A 64 GiB host whose GPU driver holds `gpu_active` bytes (`GPUActive`) with `available` free.
pub fn host(gpu_active: u64, available: u64) -> HostTotals {
    HostTotals {
        mem_total: Some(64 * GIB),
        mem_available: Some(available),
        gpu_active: Some(gpu_active),
        gpu_active_source: Some("GPUActive".into()),
        ..HostTotals::default()
    }
}

/// A ledger of these devices, processes, clients and host counters.
pub fn ledger(
    devices: &[&str],
    processes: Vec<ProcessRow>,
    clients: Vec<Client>,
    host: HostTotals,
) -> Ledger {
    Ledger {
        devices: devices.iter().map(|d| device(d)).collect(),
        processes,
        clients,
        host,
        ..Ledger::default()
    }
}
