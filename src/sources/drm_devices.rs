//! DRM and accel devices from sysfs.
//!
//! ref: Documentation/ABI/testing/sysfs-class-drm; drivers/gpu/drm/drm_sysfs.c. Each minor
//! (`/sys/class/drm/card0`, `renderD128`, `/sys/class/accel/accel0`) has a `device` link to the
//! bus device (a PCI dir named by slot, or a platform device) holding `vendor`, `device`, `uevent`
//! (`PCI_SLOT_NAME`, `DRIVER`), a `driver` link and `power/runtime_status`; amdgpu adds
//! `mem_info_{vram,gtt}_{total,used}` (bytes, drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c).

use super::pci_names::device_name;
use super::proc_pid::is_minor_name;
use crate::root::Root;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One GPU device with all its minors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// amdgpu `mem_info_gtt_total`, bytes.
    #[serde(default)]
    pub gtt_total: Option<u64>,
    /// amdgpu `mem_info_gtt_used`, bytes.
    #[serde(default)]
    pub gtt_used: Option<u64>,
    /// The kernel fact that shows the device is integrated (shares host RAM as its working
    /// memory); `None` when no fact says so.
    #[serde(default)]
    pub integrated: Option<IntegratedBy>,
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
}

/// Every DRM/accel device of the root, sorted by id.
pub fn scan_devices(root: &Root) -> Vec<DeviceInfo> {
    let mut by_id: BTreeMap<String, DeviceInfo> = BTreeMap::new();
    for class in ["drm", "accel"] {
        let class_dir = format!("sys/class/{class}");
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
        gtt_total: read("mem_info_gtt_total").and_then(|v| v.parse().ok()),
        gtt_used: read("mem_info_gtt_used").and_then(|v| v.parse().ok()),
        integrated: None,
    }
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
