//! The facts a base is matched against: component versions, devices, the job's environment
//! and the findings of a snapshot.

use super::base::Base;
use super::topology::{placement, Placement};
use crate::findings::Finding;
use crate::root::Root;
use crate::snapshot::Snapshot;
use crate::sources::drm_devices::DeviceInfo;
use crate::sources::nvml::NvGpu;
use crate::sources::system_info::SystemInfo;
use serde::Serialize;

pub use crate::sources::packages::dpkg_status;
use std::collections::BTreeMap;

/// One detected version of a component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionFact {
    /// Component name from `components.toml`.
    pub component: String,
    /// The version as found (package decorations kept).
    pub version: String,
    /// Where it was found (`intel-opencl-icd (dpkg-query)`).
    pub source: String,
    /// The process that loaded it, for a version read from a library a GPU process mapped:
    /// such versions decide over the package database's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_by: Option<u32>,
}

/// One device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceFact {
    /// PCI slot (or platform name).
    pub slot: String,
    /// PCI vendor, lower-case hex without `0x` (`8086`).
    pub vendor: Option<String>,
    /// `vendor:device`, lower-case hex without `0x` (`8086:e223`).
    pub pci_id: Option<String>,
    /// Kernel driver.
    pub driver: Option<String>,
    /// The PCIe root port it sits under, when known.
    pub root_port: Option<String>,
}

impl DeviceFact {
    /// From a scanned device and its root port.
    pub fn from_info(d: &DeviceInfo, root_port: Option<String>) -> DeviceFact {
        let hex = |s: &Option<String>| {
            s.as_deref()
                .map(|v| v.trim().trim_start_matches("0x").to_ascii_lowercase())
        };
        let vendor = hex(&d.vendor);
        let pci_id = match (&vendor, hex(&d.device)) {
            (Some(v), Some(dev)) => Some(format!("{v}:{dev}")),
            _ => None,
        };
        DeviceFact {
            slot: d.id.clone(),
            vendor,
            pci_id,
            driver: d.driver.clone(),
            root_port,
        }
    }

    /// The PCI vendor.
    pub fn vendor(&self) -> Option<&str> {
        self.vendor.as_deref()
    }
}

/// Everything the matcher looks at.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Facts {
    /// Detected component versions.
    pub versions: Vec<VersionFact>,
    /// Devices of the machine.
    pub devices: Vec<DeviceFact>,
    /// The job's environment (allow-listed names); empty = no masks, all devices visible.
    pub env: BTreeMap<String, String>,
    /// Findings of a snapshot of the machine (or a recording).
    pub findings: Vec<Finding>,
    /// The running Linux release (`7.1.3-arch1-1`), when known.
    pub kernel: Option<String>,
    /// The job's command line, when known (for the next step's `experiment` line).
    pub command: Vec<String>,
}

impl Facts {
    /// The machine's facts: versions from `sys` (and NVML's driver version), the snapshot's DRM
    /// devices and NVML GPUs with their PCI placement under `root`, and `findings`; no job
    /// environment. The placements are in the order of `Facts::devices`.
    pub fn of_machine(
        base: &Base,
        root: &Root,
        snap: &Snapshot,
        sys: &SystemInfo,
        findings: Vec<Finding>,
    ) -> (Facts, Vec<Placement>) {
        let mut devices: Vec<DeviceFact> = Vec::new();
        let mut places = Vec::new();
        for d in &snap.devices {
            let p = placement(root, &d.id);
            let nvidia = snap.nvml.iter().find(|g| g.bus_id == d.id);
            devices.push(match nvidia {
                Some(g) if d.vendor.is_none() => nvml_device(root, g, p.root_port.clone()),
                _ => DeviceFact::from_info(d, p.root_port.clone()),
            });
            places.push(p);
        }
        // What the job's processes loaded first: it decides over what is installed.
        let mut found = super::loaded::versions(base, root, snap, sys);
        found.extend(versions(base, sys, root));
        let mut versions = found;
        for g in &snap.nvml {
            if devices.iter().all(|d| d.slot != g.bus_id) {
                let p = placement(root, &g.bus_id);
                devices.push(nvml_device(root, g, p.root_port.clone()));
                places.push(p);
            }
            if let Some(v) = &g.driver_version {
                let fact = VersionFact {
                    component: "nvidia-driver".into(),
                    version: v.clone(),
                    source: "NVML".into(),
                    loaded_by: None,
                };
                if base.components.contains_key(&fact.component)
                    && !versions
                        .iter()
                        .any(|f| f.component == fact.component && f.version == fact.version)
                {
                    versions.push(fact);
                }
            }
        }
        let facts = Facts {
            versions,
            devices,
            env: BTreeMap::new(),
            findings,
            kernel: sys.kernel.as_deref().and_then(kernel_release),
            command: Vec::new(),
        };
        (facts, places)
    }
}

impl Facts {
    /// A recorded machine's facts: versions from what the recording kept (`sys`), its devices
    /// (without PCI placement, which a recording does not keep); no job environment.
    pub fn of_recording(base: &Base, sys: &SystemInfo, devices: &[DeviceInfo]) -> Facts {
        Facts {
            versions: versions_with(base, sys, Vec::new()),
            devices: devices
                .iter()
                .map(|d| DeviceFact::from_info(d, None))
                .collect(),
            env: BTreeMap::new(),
            findings: Vec::new(),
            kernel: sys.kernel.as_deref().and_then(kernel_release),
            command: Vec::new(),
        }
    }
}

/// The release in a `/proc/version` line (`Linux version 7.1.3-arch1-1 (…) …`), or the first
/// word of a bare release string.
// ref: fs/proc/version.c (the "Linux version %s" format, utsname release)
pub fn kernel_release(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let release = if first == "Linux" && words.next() == Some("version") {
        words.next()?
    } else {
        first
    };
    Some(release.to_string())
}

/// An NVIDIA GPU as NVML sees it: vendor 10de, the device id from sysfs when readable, else
/// from NVML's PCI id (virtual machines often have no PCI sysfs for a passed-through GPU).
fn nvml_device(root: &Root, g: &NvGpu, root_port: Option<String>) -> DeviceFact {
    let bus_id = g.bus_id.as_str();
    let read = |f: &str| {
        root.read_string(format!("sys/bus/pci/devices/{bus_id}/{f}"))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let info = DeviceInfo {
        id: bus_id.to_string(),
        minors: Vec::new(),
        driver: Some("nvidia".into()),
        vendor: read("vendor").or_else(|| Some("0x10de".into())),
        device: read("device").or_else(|| g.device_id()),
        name: None,
        runtime_status: None,
        vram_total: None,
        vram_used: None,
        vis_vram_total: None,
        vis_vram_used: None,
        gtt_total: None,
        gtt_used: None,
        local_totals: Default::default(),
        integrated: None,
        telemetry: Default::default(),
    };
    DeviceFact::from_info(&info, root_port)
}

/// Component versions from what `system_info` found (packages, kernel module versions) and, in a
/// capture tree where package managers are not asked, `var/lib/dpkg/status` under the root.
pub fn versions(base: &Base, sys: &SystemInfo, root: &Root) -> Vec<VersionFact> {
    let mut packages = Vec::new();
    // `system_info::gather` reads the tree's package databases too; read dpkg's here only for
    // facts gathered without them.
    if !root.is_live() && sys.packages.is_empty() {
        if let Ok(text) = root.read_string("var/lib/dpkg/status") {
            packages.extend(
                dpkg_status(&text)
                    .into_iter()
                    .map(|(n, v)| (n, v, "var/lib/dpkg/status".to_string())),
            );
        }
    }
    versions_with(base, sys, packages)
}

/// Component versions from `sys` and `more` packages (name, version, where it was read).
fn versions_with(
    base: &Base,
    sys: &SystemInfo,
    more: Vec<(String, String, String)>,
) -> Vec<VersionFact> {
    let mut packages: Vec<(String, String, String)> = sys
        .packages
        .iter()
        .map(|(n, v)| {
            let from = sys.packages_source.clone().unwrap_or_default();
            (n.clone(), v.clone(), from)
        })
        .collect();
    packages.extend(more);
    let mut out = Vec::new();
    for (component, c) in &base.components {
        for (name, version, from) in &packages {
            if c.packages.iter().any(|p| name.starts_with(p.as_str())) {
                out.push(VersionFact {
                    component: component.clone(),
                    version: version.clone(),
                    source: format!("package {name} ({from})"),
                    loaded_by: None,
                });
            }
        }
        for name in &c.python {
            if let Some(v) = sys.python.get(name) {
                out.push(VersionFact {
                    component: component.clone(),
                    version: v.clone(),
                    source: format!("Python package {name} beside the job's Python"),
                    loaded_by: None,
                });
            }
        }
        for m in &c.modules {
            if let Some(v) = sys.driver_versions.get(m) {
                out.push(VersionFact {
                    component: component.clone(),
                    version: v.clone(),
                    source: format!("/sys/module/{m}/version"),
                    loaded_by: None,
                });
            }
        }
    }
    out
}
