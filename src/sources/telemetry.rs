//! Device telemetry from sysfs: the device's hwmon (temperature, power, energy, fan; units per
//! the kernel's sysfs-interface: millidegrees Celsius, microwatts, microjoules, RPM, Hz), its
//! PCIe link (`current_link_speed`, `current_link_width` and their maxima) and its GPU clock
//! (i915 `gt_act_freq_mhz`/`gt_max_freq_mhz`, xe `tile0/gt0/freq0/act_freq`/`max_freq`, amdgpu
//! hwmon `freq1_input`). NVIDIA's come from NVML ([`super::nvml`]) into the same struct. A value
//! the kernel does not give stays `None`, and views print `-` for it.

use crate::root::Root;
use serde::{Deserialize, Serialize};

/// What a device reports of its state beside memory; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Telemetry {
    /// Temperature, millidegrees Celsius (hwmon `temp1_input`, NVML's GPU sensor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_mc: Option<i64>,
    /// Power drawn, microwatts (hwmon `power1_input`, else `power1_average`; NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_uw: Option<u64>,
    /// Power limit, microwatts (hwmon `power1_cap`, else `power1_max`; NVML's enforced limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_cap_uw: Option<u64>,
    /// Energy used since the driver loaded, microjoules (hwmon `energy1_input`: xe gives energy,
    /// not power).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_uj: Option<u64>,
    /// Fan speed, RPM (hwmon `fan1_input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_rpm: Option<u64>,
    /// Fan speed, percent of its maximum (NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_percent: Option<u32>,
    /// GPU clock now, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<u32>,
    /// GPU clock's maximum, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_max_mhz: Option<u32>,
    /// PCIe link speed now, as sysfs writes it (`16.0 GT/s PCIe`) or `Gen N` from NVML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_speed: Option<String>,
    /// PCIe link width now (lanes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_width: Option<u32>,
    /// The link's maximum speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_max_speed: Option<String>,
    /// The link's maximum width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_max_width: Option<u32>,
    /// Whole-device utilisation, percent over the driver's last sample period (NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_percent: Option<u32>,
    /// NVIDIA persistence mode (NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<bool>,
    /// NVIDIA MIG mode, current (NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<bool>,
}

impl Telemetry {
    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        *self == Telemetry::default()
    }
}

/// Most hwmon directories looked at under one device.
const MAX_HWMON: usize = 8;

/// The telemetry of the DRM device whose sysfs directory is `dev` (`…/drmN/device`).
pub fn read(root: &Root, dev: &str) -> Telemetry {
    let text = |rel: String| {
        root.read_string(rel)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && s != "Unknown")
    };
    let number = |rel: String| text(rel).and_then(|s| s.parse::<u64>().ok());
    // The kernel writes `16.0 GT/s PCIe`: anything longer or not plain ASCII is no link speed
    // (a hostile tree's escape sequences never reach a terminal).
    let speed = |rel: String| {
        text(rel).filter(|s| s.len() <= 32 && s.chars().all(|c| c.is_ascii_graphic() || c == ' '))
    };
    let mut t = Telemetry {
        link_speed: speed(format!("{dev}/current_link_speed")),
        link_width: number(format!("{dev}/current_link_width")).and_then(lanes),
        link_max_speed: speed(format!("{dev}/max_link_speed")),
        link_max_width: number(format!("{dev}/max_link_width")).and_then(lanes),
        ..Telemetry::default()
    };
    let mut hwmons: Vec<String> = root
        .list_dir(format!("{dev}/hwmon"))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.to_str().map(String::from))
        .filter(|n| n.starts_with("hwmon"))
        .collect();
    hwmons.sort();
    for h in hwmons.iter().take(MAX_HWMON) {
        let at = |f: &str| format!("{dev}/hwmon/{h}/{f}");
        t.temperature_mc = t
            .temperature_mc
            .or_else(|| text(at("temp1_input")).and_then(|s| s.parse().ok()));
        t.power_uw = t
            .power_uw
            .or_else(|| number(at("power1_input")))
            .or_else(|| number(at("power1_average")));
        t.power_cap_uw = t
            .power_cap_uw
            .or_else(|| number(at("power1_cap")))
            .or_else(|| number(at("power1_max")));
        t.energy_uj = t.energy_uj.or_else(|| number(at("energy1_input")));
        t.fan_rpm = t.fan_rpm.or_else(|| number(at("fan1_input")));
        t.clock_mhz = t
            .clock_mhz
            .or_else(|| number(at("freq1_input")).and_then(|hz| mhz(hz / 1_000_000)));
    }
    let card = dev.strip_suffix("/device").unwrap_or(dev);
    let freq = format!("{dev}/tile0/gt0/freq0");
    t.clock_mhz = t
        .clock_mhz
        .or_else(|| number(format!("{card}/gt_act_freq_mhz")).and_then(mhz))
        .or_else(|| number(format!("{freq}/act_freq")).and_then(mhz));
    t.clock_max_mhz = number(format!("{card}/gt_max_freq_mhz"))
        .or_else(|| number(format!("{freq}/max_freq")))
        .and_then(mhz);
    t
}

/// Files of a tree: (relative path, contents).
pub type Files = Vec<(String, String)>;

/// The sysfs files [`read`] reads `t` back from, for a capture or a simulated tree: (path
/// relative to the device directory, contents), and the clock files i915 keeps in the card
/// directory (relative to it), by `driver`.
pub fn files(t: &Telemetry, driver: Option<&str>) -> (Files, Files) {
    let mut dev = Files::new();
    let mut card = Files::new();
    let put = |to: &mut Files, rel: &str, v: Option<String>| {
        if let Some(v) = v {
            to.push((rel.to_string(), format!("{v}\n")));
        }
    };
    let s = |v: Option<u64>| v.map(|x| x.to_string());
    put(&mut dev, "current_link_speed", t.link_speed.clone());
    put(
        &mut dev,
        "current_link_width",
        s(t.link_width.map(u64::from)),
    );
    put(&mut dev, "max_link_speed", t.link_max_speed.clone());
    put(
        &mut dev,
        "max_link_width",
        s(t.link_max_width.map(u64::from)),
    );
    let h = "hwmon/hwmon0";
    put(
        &mut dev,
        &format!("{h}/temp1_input"),
        t.temperature_mc.map(|x| x.to_string()),
    );
    put(&mut dev, &format!("{h}/power1_input"), s(t.power_uw));
    put(&mut dev, &format!("{h}/power1_cap"), s(t.power_cap_uw));
    put(&mut dev, &format!("{h}/energy1_input"), s(t.energy_uj));
    put(&mut dev, &format!("{h}/fan1_input"), s(t.fan_rpm));
    let clock = s(t.clock_mhz.map(u64::from));
    let max = s(t.clock_max_mhz.map(u64::from));
    match driver {
        Some("xe") => {
            put(&mut dev, "tile0/gt0/freq0/act_freq", clock);
            put(&mut dev, "tile0/gt0/freq0/max_freq", max);
        }
        Some("i915") => {
            put(&mut card, "gt_act_freq_mhz", clock);
            put(&mut card, "gt_max_freq_mhz", max);
        }
        _ => put(
            &mut dev,
            &format!("{h}/freq1_input"),
            t.clock_mhz.map(|m| (u64::from(m) * 1_000_000).to_string()),
        ),
    }
    (dev, card)
}

/// A lane count sysfs may write as 0 or 255 for "unknown".
fn lanes(n: u64) -> Option<u32> {
    (1..=64).contains(&n).then_some(n as u32)
}

fn mhz(n: u64) -> Option<u32> {
    u32::try_from(n).ok().filter(|&m| m > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &std::path::Path, rel: &str, value: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{value}\n")).unwrap();
    }

    #[test]
    fn xe_gives_energy_and_its_gt_clock_i915_its_card_clock() {
        let t = tempfile::tempdir().unwrap();
        let xe = "sys/class/drm/card1/device";
        write(t.path(), &format!("{xe}/hwmon/hwmon3/temp1_input"), "47000");
        write(
            t.path(),
            &format!("{xe}/hwmon/hwmon3/energy1_input"),
            "123456789",
        );
        write(
            t.path(),
            &format!("{xe}/hwmon/hwmon3/power1_max"),
            "150000000",
        );
        write(t.path(), &format!("{xe}/tile0/gt0/freq0/act_freq"), "2400");
        write(t.path(), &format!("{xe}/tile0/gt0/freq0/max_freq"), "2800");
        write(
            t.path(),
            &format!("{xe}/current_link_speed"),
            "16.0 GT/s PCIe",
        );
        write(t.path(), &format!("{xe}/current_link_width"), "8");
        write(t.path(), &format!("{xe}/max_link_width"), "255");
        let root = Root::open(t.path()).unwrap();
        let got = read(&root, xe);
        assert_eq!(got.temperature_mc, Some(47_000));
        assert_eq!(got.energy_uj, Some(123_456_789));
        assert_eq!(got.power_uw, None);
        assert_eq!(got.power_cap_uw, Some(150_000_000));
        assert_eq!((got.clock_mhz, got.clock_max_mhz), (Some(2400), Some(2800)));
        assert_eq!(got.link_speed.as_deref(), Some("16.0 GT/s PCIe"));
        assert_eq!((got.link_width, got.link_max_width), (Some(8), None));
        let i915 = "sys/class/drm/card0/device";
        write(t.path(), "sys/class/drm/card0/gt_act_freq_mhz", "1300");
        write(t.path(), "sys/class/drm/card0/gt_max_freq_mhz", "2050");
        write(
            t.path(),
            &format!("{i915}/hwmon/hwmon1/power1_input"),
            "35000000",
        );
        let got = read(&root, i915);
        assert_eq!((got.clock_mhz, got.clock_max_mhz), (Some(1300), Some(2050)));
        assert_eq!(got.power_uw, Some(35_000_000));
        assert!(read(&root, "sys/class/drm/card9/device").is_empty());
        write(
            t.path(),
            &format!("{xe}/current_link_speed"),
            "\u{1b}]0;owned\u{7}16 GT/s",
        );
        assert_eq!(read(&root, xe).link_speed, None);
    }

    #[test]
    fn what_files_writes_read_gives_back() {
        for driver in ["xe", "i915", "amdgpu"] {
            let want = Telemetry {
                temperature_mc: Some(51_000),
                power_uw: Some(88_000_000),
                power_cap_uw: Some(230_000_000),
                energy_uj: Some(5_000_000),
                fan_rpm: Some(1200),
                clock_mhz: Some(2400),
                clock_max_mhz: (driver != "amdgpu").then_some(2800),
                link_speed: Some("32.0 GT/s PCIe".into()),
                link_width: Some(16),
                link_max_speed: Some("32.0 GT/s PCIe".into()),
                link_max_width: Some(16),
                ..Telemetry::default()
            };
            let t = tempfile::tempdir().unwrap();
            let (dev, card) = files(&want, Some(driver));
            for (rel, v) in &dev {
                write(
                    t.path(),
                    &format!("sys/class/drm/card0/device/{rel}"),
                    v.trim(),
                );
            }
            for (rel, v) in &card {
                write(t.path(), &format!("sys/class/drm/card0/{rel}"), v.trim());
            }
            let got = read(&Root::open(t.path()).unwrap(), "sys/class/drm/card0/device");
            assert_eq!(got, want, "{driver}");
        }
    }

    #[test]
    fn amdgpu_clock_comes_from_hwmon_in_hz() {
        let t = tempfile::tempdir().unwrap();
        let amd = "sys/class/drm/card0/device";
        write(
            t.path(),
            &format!("{amd}/hwmon/hwmon0/freq1_input"),
            "2482000000",
        );
        write(t.path(), &format!("{amd}/hwmon/hwmon0/fan1_input"), "1650");
        write(
            t.path(),
            &format!("{amd}/hwmon/hwmon0/power1_average"),
            "64000000",
        );
        let got = read(&Root::open(t.path()).unwrap(), amd);
        assert_eq!(got.clock_mhz, Some(2482));
        assert_eq!(got.fan_rpm, Some(1650));
        assert_eq!(got.power_uw, Some(64_000_000));
    }
}
