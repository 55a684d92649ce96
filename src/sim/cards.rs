//! The cards of a simulated machine: what each is, its PCI slot, its sysfs entry and the fdinfo
//! text a client on it prints.

use super::fdinfo_text;
use crate::sources::drm_devices::DeviceInfo;

/// One card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Card {
    /// Intel Arc Pro B70 (xe, 8086:e223), 32 GiB VRAM.
    XeDiscrete,
    /// Intel Lunar Lake integrated GPU (xe, 8086:64a0): no VRAM, its working memory is host RAM.
    XeIntegrated,
    /// AMD Instinct MI300X (amdgpu, 1002:74a1).
    Amdgpu,
    /// NVIDIA H200 (no DRM fdinfo: usage from NVML).
    Nvidia,
}

impl Card {
    /// The kernel driver.
    pub(super) fn driver(self) -> &'static str {
        match self {
            Card::XeDiscrete | Card::XeIntegrated => "xe",
            Card::Amdgpu => "amdgpu",
            Card::Nvidia => "nvidia",
        }
    }

    /// The PCI slot of card `i` of a machine (unique across the kinds a machine mixes).
    pub(super) fn slot(self, i: u32, amdgpu_only: bool) -> String {
        let bus = match self {
            Card::XeDiscrete => 0x03 + i,
            Card::XeIntegrated => return "0000:00:02.0".into(),
            // amdgpu-tp keeps its slots; in a mix amdgpu cards sit below xe's 64.
            Card::Amdgpu if amdgpu_only => 0xc1 + i,
            Card::Amdgpu => 0x80 + i,
            Card::Nvidia => 0x18 + i,
        };
        format!("0000:{bus:02x}:00.0")
    }

    /// The sysfs device of a DRM card at `slot` with DRM index `i`; `None` for NVIDIA, whose
    /// devices come from NVML.
    /// What a simulated card's hwmon and PCIe files say (made-up, steady values of a busy card).
    fn telemetry(self) -> crate::sources::telemetry::Telemetry {
        let link = |gts: &str, width| (Some(format!("{gts} GT/s PCIe")), Some(width));
        let (speed, width) = match self {
            Card::XeDiscrete | Card::Amdgpu => link("16.0", 16),
            Card::XeIntegrated | Card::Nvidia => (None, None),
        };
        crate::sources::telemetry::Telemetry {
            temperature_mc: Some(if self == Card::XeIntegrated {
                45_000
            } else {
                58_000
            }),
            energy_uj: (self == Card::XeDiscrete).then_some(9_000_000_000),
            power_uw: (self == Card::Amdgpu).then_some(180_000_000),
            fan_rpm: (self != Card::XeIntegrated).then_some(1_400),
            clock_mhz: Some(2_400),
            clock_max_mhz: (self != Card::Amdgpu).then_some(2_800),
            link_speed: speed.clone(),
            link_width: width,
            link_max_speed: speed,
            link_max_width: width,
            ..Default::default()
        }
    }

    pub(super) fn device_info(self, i: u32, slot: String) -> Option<DeviceInfo> {
        let (vendor, device) = match self {
            Card::XeDiscrete => ("0x8086", "0xe223"),
            Card::XeIntegrated => ("0x8086", "0x64a0"),
            Card::Amdgpu => ("0x1002", "0x74a1"),
            Card::Nvidia => return None,
        };
        Some(DeviceInfo {
            id: slot,
            minors: vec![format!("card{i}"), format!("renderD{}", 128 + i)],
            driver: Some(self.driver().into()),
            name: crate::sources::pci_names::device_name(vendor, device),
            vendor: Some(vendor.into()),
            device: Some(device.into()),
            runtime_status: Some("active".into()),
            vram_total: None,
            vram_used: None,
            vis_vram_total: None,
            vis_vram_used: None,
            gtt_total: None,
            gtt_used: None,
            local_totals: Default::default(),
            integrated: None,
            telemetry: self.telemetry(),
        })
    }

    /// The fdinfo text of a client on this card at `slot`; `None` for NVIDIA (no
    /// drm-usage-stats).
    pub(super) fn fdinfo(self, client: u64, slot: &str, host: u64, local: u64) -> Option<String> {
        match self {
            Card::XeDiscrete => Some(fdinfo_text::xe(client, slot, host, local)),
            Card::XeIntegrated => Some(fdinfo_text::xe_integrated(client, slot, host)),
            Card::Amdgpu => Some(fdinfo_text::amdgpu(client, slot, host, local)),
            Card::Nvidia => None,
        }
    }
}
