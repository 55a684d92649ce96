//! The device telemetry families: one gauge per reading in base units (Celsius, watts, joules,
//! hertz, lanes, ratios), labelled by `device`; a device whose driver does not give a reading
//! has no series in that family (never a 0 that reads as a value).

use super::family::{l, SortedRatios};
use crate::ledger::Ledger;
use crate::sources::telemetry::Telemetry;
use prometheus_client::registry::Registry;

/// (name, help, the reading in base units).
type Reading = (&'static str, &'static str, fn(&Telemetry) -> Option<f64>);

const READINGS: [Reading; 10] = [
    ("gpuledger_device_temperature_celsius", "GPU temperature (hwmon temp1_input or NVML)", |t| {
        t.temperature_mc.map(|m| m as f64 / 1000.0)
    }),
    ("gpuledger_device_power_watts", "Power drawn (hwmon power1_input or power1_average, or NVML)", |t| {
        t.power_uw.map(|u| u as f64 / 1e6)
    }),
    ("gpuledger_device_power_limit_watts", "Power limit (hwmon power1_cap or power1_max, or NVML's enforced limit)", |t| {
        t.power_cap_uw.map(|u| u as f64 / 1e6)
    }),
    ("gpuledger_device_energy_joules", "Energy used since the driver loaded (hwmon energy1_input; xe gives energy, not power): rate() it for watts", |t| {
        t.energy_uj.map(|u| u as f64 / 1e6)
    }),
    ("gpuledger_device_fan_rpm", "Fan speed (hwmon fan1_input)", |t| t.fan_rpm.map(|r| r as f64)),
    ("gpuledger_device_fan_speed_ratio", "Fan speed as a share of its maximum (NVML)", |t| {
        t.fan_percent.map(|p| f64::from(p) / 100.0)
    }),
    ("gpuledger_device_clock_hertz", "GPU clock now (i915 gt_act_freq_mhz, xe act_freq, amdgpu hwmon freq1_input, NVML graphics clock)", |t| {
        t.clock_mhz.map(|m| f64::from(m) * 1e6)
    }),
    ("gpuledger_device_clock_max_hertz", "GPU clock maximum", |t| t.clock_max_mhz.map(|m| f64::from(m) * 1e6)),
    ("gpuledger_device_pcie_link_width", "PCIe lanes the link runs at now (current_link_width or NVML)", |t| {
        t.link_width.map(f64::from)
    }),
    ("gpuledger_device_utilization_ratio", "Share of the last sample period the GPU was busy (NVML)", |t| {
        t.utilization_percent.map(|p| f64::from(p) / 100.0)
    }),
];

/// Registers every telemetry family some device has a reading for.
pub(crate) fn register(reg: &mut Registry, ledger: &Ledger) {
    for (name, help, read) in READINGS {
        let mut fam = SortedRatios::default();
        for d in &ledger.devices {
            if let Some(v) = read(&d.telemetry) {
                fam.add(l(&[("device", d.id.clone())]), v);
            }
        }
        reg.register(name, help, fam);
    }
}
