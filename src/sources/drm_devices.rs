//! DRM and accel devices from sysfs.
//!
//! ref: Documentation/ABI/testing/sysfs-class-drm; drivers/gpu/drm/drm_sysfs.c. Each minor
//! (`/sys/class/drm/card0`, `renderD128`, `/sys/class/accel/accel0`) has a `device` link to the
//! bus device (a PCI dir named by slot, or a platform device) holding `vendor`, `device`, `uevent`
//! (`PCI_SLOT_NAME`, `DRIVER`), a `driver` link and `power/runtime_status`; amdgpu adds
//! `mem_info_{vram,gtt}_{total,used}` (bytes, drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c).
//!
//! Device capacity without waking a runtime-suspended device:
//! - ref: amdgpu_vram_mgr.c `amdgpu_mem_info_vram_{total,used}_show` print
//!   `adev->gmc.real_vram_size` and `ttm_resource_manager_usage()`; amdgpu_gtt_mgr.c
//!   `amdgpu_mem_info_gtt_{total,used}_show` print the GTT manager's size and usage. None of them
//!   takes a runtime-PM reference (unlike amdgpu_pm.c's attributes), so they are read on a
//!   suspended device too.
//! - xe: `tile<n>/physical_vram_size_bytes` (xe_tile_sysfs.c; the attribute Intel's own sysman
//!   in compute-runtime reads for the memory range, and igt's `xe_sysfs_tile` checks; some
//!   kernels put it under `tile<n>/memory/`) is each tile's physical VRAM, a little more than the
//!   usable size (stolen and reserved pages). It prints a cached value and touches no hardware.
//!   It becomes region `vram<n>`, the name xe gives the tile's VRAM in fdinfo and dmem.
//! - i915: `lmem_total_bytes` (device or card directory) where the kernel publishes it, as
//!   region `local0`.
//! - Otherwise capacity comes from the root cgroup's `dmem.capacity`
//!   (Documentation/admin-guide/cgroup-v2.rst, Linux 6.14+): ref: xe_ttm_vram_mgr.c and
//!   amdgpu_vram_mgr.c register `drm/<pci slot>/vram0|vram1` and `…/vram` with the region's size
//!   through `drmm_cgroup_register_region()`. A cgroup file never touches the device. A region
//!   named by both keeps the sysfs total.
//! - NVIDIA: NVML `nvmlDeviceGetMemoryInfo` (see `nvml`).

use super::pci_names::device_name;
use super::proc_pid::is_minor_name;
use crate::layout;
use crate::root::Root;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One GPU device with all its minors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// PCI slot (`0000:03:00.0`) or platform device name; the key used everywhere else.
    pub id: String,
    /// Minor names (`card1`, `renderD128`).
    pub minors: Vec<String>,
    /// Kernel driver name.
    pub driver: Option<String>,
    /// PCI vendor id, e.g. `0x8086`.
    pub vendor: Option<String>,
    /// PCI device id, e.g. `0xe223`.
    pub device: Option<String>,
    /// Human name when the id is known.
    pub name: Option<String>,
    /// `power/runtime_status` (`active`, `suspended`, …).
    pub runtime_status: Option<String>,
    /// amdgpu `mem_info_vram_total`, bytes.
    #[serde(default)]
    pub vram_total: Option<u64>,
    /// amdgpu `mem_info_vram_used`, bytes.
    #[serde(default)]
    pub vram_used: Option<u64>,
    /// amdgpu `mem_info_vis_vram_total`: the CPU-visible part of VRAM (the PCI BAR), bytes.
    #[serde(default)]
    pub vis_vram_total: Option<u64>,
    /// amdgpu `mem_info_vis_vram_used`, bytes.
    #[serde(default)]
    pub vis_vram_used: Option<u64>,
    /// amdgpu `mem_info_gtt_total`, bytes.
    #[serde(default)]
    pub gtt_total: Option<u64>,
    /// amdgpu `mem_info_gtt_used`, bytes.
    #[serde(default)]
    pub gtt_used: Option<u64>,
    /// Device-local regions whose size sysfs states and no per-driver field above holds (xe
    /// `tile<n>/physical_vram_size_bytes` as `vram<n>`, i915 `lmem_total_bytes` as `local0`).
    #[serde(default)]
    pub local_totals: BTreeMap<String, u64>,
    /// The kernel fact that shows the device is integrated (shares host RAM as its working
    /// memory); `None` when no fact says so.
    #[serde(default)]
    pub integrated: Option<IntegratedBy>,
    /// Temperature, power, fan, clocks, PCIe link (hwmon and sysfs, or NVML).
    #[serde(default, skip_serializing_if = "super::telemetry::Telemetry::is_empty")]
    pub telemetry: super::telemetry::Telemetry,
}

/// Why a device is taken to be an integrated GPU. Its host-class memory is its working memory,
/// never a mirror of another device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntegratedBy {
    /// A platform device, not on PCI (SoC GPUs: msm, panfrost, panthor, v3d, etnaviv, lima…).
    PlatformDevice,
    /// amdgpu APU: its KFD topology node has CPU cores (`cpu_cores_count` > 0).
    KfdApuNode,
    /// i915/xe: its clients' fdinfo names no device-local region (discrete parts always print
    /// `local0`/`vram0`, integrated ones only `system0`/`system`/`stolen*`).
    NoLocalRegion,
}

/// Whether `id` has the PCI slot form `dddd:bb:dd.f`.
pub fn is_pci_slot(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11]
            .iter()
            .all(|&i| b[i].is_ascii_hexdigit())
}

impl DeviceInfo {
    /// Whether runtime PM reports the device asleep (reading xe fdinfo would wake it).
    pub fn is_suspended(&self) -> bool {
        self.runtime_status.as_deref() == Some("suspended")
    }

    /// The device's memory regions with the size and use the kernel or NVML states for them:
    /// amdgpu sysfs or NVML (`vram`, `gtt`), then the root cgroup's `dmem.capacity` entries
    /// `drm/<id>/<region>` (a region already known takes only a missing total from it). Unknown
    /// numbers stay `None`, never 0.
    pub fn memory(&self, dmem_capacity: &BTreeMap<String, u64>) -> Vec<RegionMemory> {
        let mut out: Vec<RegionMemory> = [
            ("vram", self.vram_total, self.vram_used),
            ("vis_vram", self.vis_vram_total, self.vis_vram_used),
            ("gtt", self.gtt_total, self.gtt_used),
        ]
        .into_iter()
        .filter(|(_, total, used)| total.is_some() || used.is_some())
        .map(|(region, total, used)| RegionMemory::new(region, total, used))
        .collect();
        for (region, &bytes) in &self.local_totals {
            out.push(RegionMemory::new(region, Some(bytes), None));
        }
        let prefix = format!("drm/{}/", self.id);
        for (key, &bytes) in dmem_capacity {
            let Some(region) = key.strip_prefix(&prefix) else {
                continue;
            };
            match out.iter_mut().find(|r| r.region == region) {
                Some(known) => known.total = known.total.or(Some(bytes)),
                None => out.push(RegionMemory::new(region, Some(bytes), None)),
            }
        }
        out
    }

    /// Device-local (VRAM) capacity: the sum of the local regions' totals, `None` when no
    /// local region has a known total.
    pub fn local_capacity(&self, dmem_capacity: &BTreeMap<String, u64>) -> Option<u64> {
        self.memory(dmem_capacity)
            .iter()
            .filter(|r| r.local)
            .filter_map(|r| r.total)
            .reduce(u64::saturating_add)
    }

    /// Device-local memory in use as the driver states it: the sum over the local regions, `None`
    /// unless every local region says (xe and dmem give no use, only capacity).
    pub fn local_used(&self, dmem_capacity: &BTreeMap<String, u64>) -> Option<u64> {
        let local: Vec<RegionMemory> = self
            .memory(dmem_capacity)
            .into_iter()
            .filter(|r| r.local)
            .collect();
        if local.is_empty() {
            return None;
        }
        local
            .iter()
            .try_fold(0u64, |sum, r| Some(sum.saturating_add(r.used?)))
    }
}

/// One memory region of a device as the kernel or NVML sizes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegionMemory {
    /// `vram`, `gtt` (amdgpu sysfs, NVML) or the dmem region name (`vram0`, `vram1`, `stolen`).
    pub region: String,
    /// Whether the region is on the device (VRAM), not host memory it maps or steals.
    pub local: bool,
    /// Size, bytes.
    pub total: Option<u64>,
    /// In use, bytes, where the driver says (amdgpu sysfs, NVML).
    pub used: Option<u64>,
}

impl RegionMemory {
    fn new(region: &str, total: Option<u64>, used: Option<u64>) -> RegionMemory {
        RegionMemory {
            region: region.to_string(),
            // Drivers name their device memory vram/vram<n> (i915: local<n>) in dmem and
            // fdinfo alike; amdgpu's vis_vram is the CPU-visible window of vram, already inside
            // it, so never summed.
            local: region.starts_with("vram") || region.starts_with("local"),
            total,
            used,
        }
    }
}

/// Every DRM/accel device of the root, sorted by id.
pub fn scan_devices(root: &Root) -> Vec<DeviceInfo> {
    let mut by_id: BTreeMap<String, DeviceInfo> = BTreeMap::new();
    for class in ["drm", "accel"] {
        let class_dir = layout::class_dir(class);
        let Ok(names) = root.list_dir(&class_dir) else {
            continue;
        };
        for name in names
            .iter()
            .filter_map(|n| n.to_str())
            .filter(|n| is_minor_name(n))
        {
            let dev = format!("{class_dir}/{name}/device");
            let id = device_id(root, &dev).unwrap_or_else(|| name.to_string());
            let entry = by_id
                .entry(id.clone())
                .or_insert_with(|| read_device(root, &dev, id));
            entry.minors.push(name.to_string());
        }
    }
    let mut out: Vec<DeviceInfo> = by_id.into_values().collect();
    let apus = crate::sources::kfd::apu_slots(root);
    for d in &mut out {
        d.minors.sort_by_key(|m| minor_sort_key(m));
        d.integrated = if !is_pci_slot(&d.id) {
            Some(IntegratedBy::PlatformDevice)
        } else if apus.contains(&d.id) {
            Some(IntegratedBy::KfdApuNode)
        } else {
            None
        };
    }
    out
}

fn minor_sort_key(m: &str) -> (u8, u32) {
    let num = m
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .unwrap_or(0);
    (if m.starts_with("card") { 0 } else { 1 }, num)
}

fn device_id(root: &Root, dev: &str) -> Option<String> {
    if let Some(slot) = uevent(root, dev).remove("PCI_SLOT_NAME") {
        return Some(slot);
    }
    let link = root.read_link(dev).ok()?;
    last_component(&link)
}

fn read_device(root: &Root, dev: &str, id: String) -> DeviceInfo {
    let read = |file: &str| {
        root.read_string(format!("{dev}/{file}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let vendor = read("vendor");
    let device = read("device");
    let driver = root
        .read_link(format!("{dev}/driver"))
        .ok()
        .and_then(|l| last_component(&l))
        .or_else(|| uevent(root, dev).remove("DRIVER"));
    let name = vendor
        .as_deref()
        .and_then(|v| device_name(v, device.as_deref().unwrap_or("")));
    DeviceInfo {
        id,
        minors: Vec::new(),
        driver,
        name,
        vendor,
        device,
        runtime_status: read("power/runtime_status"),
        vram_total: read("mem_info_vram_total").and_then(|v| v.parse().ok()),
        vram_used: read("mem_info_vram_used").and_then(|v| v.parse().ok()),
        vis_vram_total: read("mem_info_vis_vram_total").and_then(|v| v.parse().ok()),
        vis_vram_used: read("mem_info_vis_vram_used").and_then(|v| v.parse().ok()),
        gtt_total: read("mem_info_gtt_total").and_then(|v| v.parse().ok()),
        gtt_used: read("mem_info_gtt_used").and_then(|v| v.parse().ok()),
        local_totals: local_totals(root, dev),
        integrated: None,
        telemetry: super::telemetry::read(root, dev),
    }
}

/// xe's per-tile physical VRAM and i915's `lmem_total_bytes`, by region name.
fn local_totals(root: &Root, dev: &str) -> BTreeMap<String, u64> {
    let number = |rel: String| {
        root.read_string(rel)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&b| b > 0)
    };
    let mut out = BTreeMap::new();
    for name in root.list_dir(dev).unwrap_or_default() {
        let Some(n) = name
            .to_str()
            .and_then(|n| n.strip_prefix("tile"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let bytes = number(format!("{dev}/tile{n}/physical_vram_size_bytes"))
            .or_else(|| number(format!("{dev}/tile{n}/memory/physical_vram_size_bytes")));
        if let Some(b) = bytes {
            out.insert(format!("vram{n}"), b);
        }
    }
    let card = dev.strip_suffix("/device").unwrap_or(dev);
    if let Some(b) = number(format!("{dev}/lmem_total_bytes"))
        .or_else(|| number(format!("{card}/lmem_total_bytes")))
    {
        out.insert("local0".into(), b);
    }
    out
}

fn uevent(root: &Root, dev: &str) -> BTreeMap<String, String> {
    root.read_string(format!("{dev}/uevent"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn last_component(p: &Path) -> Option<String> {
    Some(p.file_name()?.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(id: &str) -> DeviceInfo {
        DeviceInfo {
            id: id.into(),
            ..Default::default()
        }
    }

    #[test]
    fn capacity_from_sysfs_and_dmem_without_inventing_zeros() {
        let dmem: BTreeMap<String, u64> = [
            ("drm/0000:03:00.0/vram0", 12 << 30),
            ("drm/0000:03:00.0/vram1", 12 << 30),
            ("drm/0000:03:00.0/stolen", 64 << 20),
            ("drm/0000:04:00.0/vram", 24 << 30),
            ("drm/0000:03:00.00/vram0", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let xe = dev("0000:03:00.0");
        let regions = xe.memory(&dmem);
        assert_eq!(regions.len(), 3, "{regions:?}");
        assert!(regions.iter().all(|r| r.used.is_none()));
        assert_eq!(
            xe.local_capacity(&dmem),
            Some(24 << 30),
            "stolen is not VRAM"
        );

        // amdgpu: sysfs used with dmem's total filling the gap, never a second vram region.
        let amd = DeviceInfo {
            vram_used: Some(3 << 30),
            gtt_total: Some(8 << 30),
            ..dev("0000:04:00.0")
        };
        let regions = amd.memory(&dmem);
        assert_eq!(regions.len(), 2, "{regions:?}");
        assert_eq!(regions[0].total, Some(24 << 30));
        assert_eq!(regions[0].used, Some(3 << 30));
        assert!(!regions[1].local);
        assert_eq!(amd.local_capacity(&dmem), Some(24 << 30));
        assert_eq!(amd.local_used(&dmem), Some(3 << 30));
        assert_eq!(xe.local_used(&dmem), None, "dmem gives no use");

        let unknown = dev("0000:05:00.0");
        assert!(unknown.memory(&dmem).is_empty());
        assert_eq!(unknown.local_capacity(&dmem), None);
    }
}
