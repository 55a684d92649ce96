//! The "Device telemetry" table of the snapshot: temperature, power, fan, clock, PCIe link,
//! utilisation and NVIDIA's modes per device, `-` where the driver gives no value. Only printed
//! when some device gives any.

use super::text_table::{render_fit, Align};
use crate::ledger::Ledger;
use crate::sources::telemetry::Telemetry;

/// The section, or nothing when no device reports telemetry.
pub fn section(l: &Ledger, width: usize) -> String {
    if l.devices.iter().all(|d| d.telemetry.is_empty()) {
        return String::new();
    }
    let rows: Vec<Vec<String>> = l
        .devices
        .iter()
        .map(|d| {
            let t = &d.telemetry;
            vec![
                d.id.clone(),
                t.temperature_mc
                    .map_or("-".into(), |m| format!("{} °C", m / 1000)),
                power(t),
                fan(t),
                pair(t.clock_mhz, t.clock_max_mhz, " MHz"),
                link(t),
                t.utilization_percent
                    .map_or("-".into(), |u| format!("{u} %")),
                modes(t),
            ]
        })
        .collect();
    let headers = [
        ("DEVICE", Align::Left),
        ("TEMP", Align::Right),
        ("POWER DRAW", Align::Right),
        ("FAN", Align::Right),
        ("CLOCK", Align::Right),
        ("PCIE LINK", Align::Fold),
        ("UTIL", Align::Right),
        ("MODE", Align::Fold),
    ];
    format!(
        "\nDevice telemetry (-: not given by hwmon, sysfs or NVML)\n{}",
        render_fit("  ", &headers, &rows, width)
    )
}

/// `88 W / 230 W` (drawn / limit); xe, which gives energy and no power, as the energy counter.
fn power(t: &Telemetry) -> String {
    let w = |uw: u64| format!("{} W", uw / 1_000_000);
    match (t.power_uw, t.power_cap_uw, t.energy_uj) {
        (Some(p), Some(c), _) => format!("{} / {}", w(p), w(c)),
        (Some(p), None, _) => w(p),
        (None, cap, Some(e)) => {
            let limit = cap.map(|c| format!(", limit {}", w(c))).unwrap_or_default();
            format!("{:.1} kJ used{limit}", e as f64 / 1e9)
        }
        (None, Some(c), None) => format!("- / {}", w(c)),
        (None, None, None) => "-".into(),
    }
}

fn fan(t: &Telemetry) -> String {
    match (t.fan_rpm, t.fan_percent) {
        (Some(r), _) => format!("{r} RPM"),
        (None, Some(p)) => format!("{p} %"),
        (None, None) => "-".into(),
    }
}

/// `now / max` with a unit, `-` for an unknown side.
fn pair(now: Option<u32>, max: Option<u32>, unit: &str) -> String {
    let s = |v: Option<u32>| v.map_or("-".to_string(), |x| x.to_string());
    match (now, max) {
        (None, None) => "-".into(),
        (n, None) => format!("{}{unit}", s(n)),
        (n, m) => format!("{} / {}{unit}", s(n), s(m)),
    }
}

/// `16.0 GT/s PCIe x16` (and `of 32.0 GT/s PCIe x16` where the maximum differs: a card that
/// trained to a slower or narrower link than it can run).
fn link(t: &Telemetry) -> String {
    let one = |speed: &Option<String>, width: Option<u32>| match (speed, width) {
        (None, None) => None,
        (s, w) => Some(format!(
            "{} x{}",
            s.as_deref().unwrap_or("-"),
            w.map_or("-".into(), |w| w.to_string())
        )),
    };
    let now = one(&t.link_speed, t.link_width);
    let max = one(&t.link_max_speed, t.link_max_width);
    match (now, max) {
        (Some(n), Some(m)) if n != m => format!("{n} of {m}"),
        (Some(n), _) => n,
        (None, Some(m)) => format!("- of {m}"),
        (None, None) => "-".into(),
    }
}

/// NVIDIA's persistence and MIG modes, where NVML said them.
fn modes(t: &Telemetry) -> String {
    let mut out = Vec::new();
    if let Some(p) = t.persistence {
        out.push(if p {
            "persistence on"
        } else {
            "persistence off"
        });
    }
    if let Some(m) = t.mig {
        out.push(if m { "MIG on" } else { "MIG off" });
    }
    if out.is_empty() {
        "-".into()
    } else {
        out.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_below_its_maximum_and_xe_energy_are_said() {
        let t = Telemetry {
            link_speed: Some("2.5 GT/s PCIe".into()),
            link_width: Some(1),
            link_max_speed: Some("32.0 GT/s PCIe".into()),
            link_max_width: Some(16),
            energy_uj: Some(9_000_000_000),
            power_cap_uw: Some(230_000_000),
            ..Telemetry::default()
        };
        assert_eq!(link(&t), "2.5 GT/s PCIe x1 of 32.0 GT/s PCIe x16");
        assert_eq!(power(&t), "9.0 kJ used, limit 230 W");
        assert_eq!(pair(Some(2400), None, " MHz"), "2400 MHz");
        assert_eq!(modes(&Telemetry::default()), "-");
    }
}
