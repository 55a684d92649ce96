//! NVIDIA GPUs through NVML (libnvidia-ml, loaded at run time by nvml-wrapper). NVIDIA's kernel
//! driver prints no drm-usage-stats in fdinfo, so per-process GPU memory comes from NVML's
//! running compute and graphics processes. A machine without the library simply has no NVIDIA
//! backend: never an error, never a link failure.
//!
//! Host memory pinned through the CUDA driver is not in NVML: `cudaHostAlloc` memory is a shared
//! `/dev/zero` mapping of the process (counted in RssShmem), read from `/proc/PID/smaps` for
//! processes holding NVIDIA fds (see `proc_pid::read_dev_zero_rss`). `cudaHostRegister` pins a
//! process's existing anonymous pages and shows in no counter at all (seen on an H200, driver
//! 580.159): gpuledger cannot see it, and neither can any other tool.

use serde::{Deserialize, Serialize};

/// One NVIDIA GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvGpu {
    /// PCI bus id normalised to sysfs form (`0000:18:00.0`).
    pub bus_id: String,
    /// Product name.
    pub name: String,
    /// VRAM total, bytes (`nvmlDeviceGetMemoryInfo`); `None` where NVML does not answer it.
    #[serde(default)]
    pub memory_total: Option<u64>,
    /// VRAM used, bytes; `None` where NVML does not answer it.
    #[serde(default)]
    pub memory_used: Option<u64>,
    /// Driver version.
    pub driver_version: Option<String>,
    /// NVML's PCI id: the device id in the high 16 bits, the vendor (0x10de) in the low 16.
    #[serde(default)]
    pub pci_device_id: Option<u32>,
    /// (pid, used GPU memory) of every compute or graphics process; `None` when NVML cannot tell.
    pub processes: Vec<(u32, Option<u64>)>,
    /// Temperature, power, fan, clocks, PCIe link, utilisation, persistence and MIG mode.
    #[serde(default)]
    pub telemetry: super::telemetry::Telemetry,
}

impl NvGpu {
    /// The PCI device id as sysfs writes it (`0x2335`), from NVML's combined id.
    pub fn device_id(&self) -> Option<String> {
        self.pci_device_id.map(|id| format!("0x{:04x}", id >> 16))
    }
}

/// Something that answers like NVML (the library, or recorded answers in tests).
pub trait NvmlSource: std::fmt::Debug + Send {
    /// Every GPU with its processes.
    fn gpus(&self) -> Result<Vec<NvGpu>, String>;
}

/// The real NVML.
#[derive(Debug)]
pub struct NvmlLib(nvml_wrapper::Nvml);

/// Loads NVML; `None` where libnvidia-ml or the driver is absent.
pub fn load() -> Option<NvmlLib> {
    nvml_wrapper::Nvml::init().ok().map(NvmlLib)
}

impl NvmlSource for NvmlLib {
    fn gpus(&self) -> Result<Vec<NvGpu>, String> {
        use nvml_wrapper::enums::device::UsedGpuMemory;
        let nvml = &self.0;
        let count = nvml.device_count().map_err(|e| e.to_string())?;
        let driver = nvml.sys_driver_version().ok();
        let mut out = Vec::new();
        for i in 0..count {
            let dev = nvml.device_by_index(i).map_err(|e| e.to_string())?;
            // Some parts answer NotSupported here; the GPU and its processes still count, with
            // capacity unknown rather than 0.
            let mem = dev.memory_info().ok();
            let mut processes: Vec<(u32, Option<u64>)> = Vec::new();
            let lists = [
                dev.running_compute_processes(),
                dev.running_graphics_processes(),
            ];
            for p in lists.into_iter().flatten().flatten() {
                let used = match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                };
                if !processes.iter().any(|(pid, _)| *pid == p.pid) {
                    processes.push((p.pid, used));
                }
            }
            let pci = dev.pci_info().map_err(|e| e.to_string())?;
            out.push(NvGpu {
                bus_id: normalize_bus_id(&pci.bus_id),
                pci_device_id: Some(pci.pci_device_id),
                name: dev.name().unwrap_or_else(|_| "NVIDIA GPU".into()),
                memory_total: mem.as_ref().map(|m| m.total),
                memory_used: mem.as_ref().map(|m| m.used),
                driver_version: driver.clone(),
                processes,
                telemetry: telemetry(&dev),
            });
        }
        Ok(out)
    }
}

/// What NVML answers of a GPU's state beside memory; a query the part does not support is left
/// out.
fn telemetry(dev: &nvml_wrapper::Device) -> super::telemetry::Telemetry {
    use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
    let link = |gen: Option<u32>| gen.map(|g| format!("Gen {g}"));
    super::telemetry::Telemetry {
        temperature_mc: dev
            .temperature(TemperatureSensor::Gpu)
            .ok()
            .map(|c| i64::from(c) * 1000),
        power_uw: dev.power_usage().ok().map(|mw| u64::from(mw) * 1000),
        power_cap_uw: dev
            .enforced_power_limit()
            .ok()
            .map(|mw| u64::from(mw) * 1000),
        fan_percent: dev.fan_speed(0).ok(),
        clock_mhz: dev.clock_info(Clock::Graphics).ok(),
        clock_max_mhz: dev.max_clock_info(Clock::Graphics).ok(),
        link_speed: link(dev.current_pcie_link_gen().ok()),
        link_width: dev.current_pcie_link_width().ok(),
        link_max_speed: link(dev.max_pcie_link_gen().ok()),
        link_max_width: dev.max_pcie_link_width().ok(),
        utilization_percent: dev.utilization_rates().ok().map(|u| u.gpu),
        persistence: dev.is_in_persistent_mode().ok(),
        mig: dev.mig_mode().ok().map(|m| m.current == 1),
        ..Default::default()
    }
}

/// NVML answers saved in a capture (`nvml.json` at the root, written by `capture`).
#[derive(Debug, Clone)]
pub struct RecordedNvml(pub Vec<NvGpu>);

impl NvmlSource for RecordedNvml {
    fn gpus(&self) -> Result<Vec<NvGpu>, String> {
        Ok(self.0.clone())
    }
}

/// The file name of saved NVML answers in a capture tree.
pub const CAPTURE_FILE: &str = crate::layout::NVML;

/// Loads saved NVML answers from a captured root, if it has them.
pub fn load_recorded(root: &crate::root::Root) -> Option<RecordedNvml> {
    let text = root.read_string(CAPTURE_FILE).ok()?;
    serde_json::from_str(&text).ok().map(RecordedNvml)
}

/// NVML's `00000000:18:00.0` → sysfs `0000:18:00.0`, lower case.
pub fn normalize_bus_id(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    match id.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => id,
    }
}

/// The device entry of an NVIDIA GPU.
pub fn device_info(g: &NvGpu) -> super::drm_devices::DeviceInfo {
    super::drm_devices::DeviceInfo {
        id: g.bus_id.clone(),
        minors: Vec::new(),
        driver: Some("nvidia".into()),
        vendor: Some("0x10de".into()),
        device: g.device_id(),
        name: Some(g.name.clone()),
        runtime_status: None,
        vram_total: g.memory_total,
        vram_used: g.memory_used,
        vis_vram_total: None,
        vis_vram_used: None,
        gtt_total: None,
        gtt_used: None,
        local_totals: Default::default(),
        integrated: None,
        telemetry: g.telemetry.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_id_from_nvmls_combined_id() {
        let g = NvGpu {
            bus_id: "0000:00:06.0".into(),
            name: "NVIDIA H200".into(),
            memory_total: None,
            memory_used: None,
            driver_version: None,
            pci_device_id: Some(0x2335_10de),
            processes: Vec::new(),
            telemetry: Default::default(),
        };
        assert_eq!(g.device_id().as_deref(), Some("0x2335"));
        assert_eq!(device_info(&g).device.as_deref(), Some("0x2335"));
        let old: NvGpu = serde_json::from_str(
            r#"{"bus_id":"0000:18:00.0","name":"x","driver_version":null,"processes":[]}"#,
        )
        .unwrap();
        assert_eq!(
            old.device_id(),
            None,
            "captures from before the field read as unknown"
        );
    }

    #[test]
    fn bus_ids() {
        assert_eq!(normalize_bus_id("00000000:18:00.0"), "0000:18:00.0");
        assert_eq!(normalize_bus_id("0000:AF:00.0"), "0000:af:00.0");
    }

    #[test]
    fn absent_library_is_no_error() {
        // On machines without libnvidia-ml (CI) this is None; with it, a list of GPUs.
        if let Some(lib) = load() {
            assert!(lib.gpus().is_ok());
        }
    }
}
