//! Human names for common GPU PCI ids. Only ids we are sure of are named; other devices of a known
//! vendor get the vendor's family, anything else stays unnamed (`null` in JSON, "unknown" in tables).

/// The marketing name for a vendor:device pair (ids as in sysfs, e.g. `0x8086`, `0xe223`).
pub fn device_name(vendor: &str, device: &str) -> Option<String> {
    let v = parse_id(vendor)?;
    let d = parse_id(device).unwrap_or(0);
    let known = match (v, d) {
        (0x8086, 0xe223) => "Intel Arc Pro B70 (Battlemage G31)",
        (0x8086, 0xe211) => "Intel Arc Pro B60 (Battlemage G21)",
        (0x8086, 0xe20b) => "Intel Arc B580 (Battlemage G21)",
        (0x8086, 0xe20c) => "Intel Arc B570 (Battlemage G21)",
        (0x8086, 0x56a0) => "Intel Arc A770 (Alchemist DG2)",
        (0x8086, 0x56a1) => "Intel Arc A750 (Alchemist DG2)",
        (0x8086, 0x56a5) => "Intel Arc A380 (Alchemist DG2)",
        (0x8086, 0x56a6) => "Intel Arc A310 (Alchemist DG2)",
        (0x8086, 0x5690) => "Intel Arc A770M (Alchemist DG2)",
        (0x8086, 0x56c0) => "Intel Data Center GPU Flex 170 (Alchemist)",
        (0x8086, 0x56c1) => "Intel Data Center GPU Flex 140 (Alchemist)",
        (0x8086, 0x0bd5) => "Intel Data Center GPU Max 1550 (Ponte Vecchio)",
        (0x1002, 0x74a1) => "AMD Instinct MI300X",
        (0x1002, 0x74a0) => "AMD Instinct MI300A",
        (0x1002, 0x740f) => "AMD Instinct MI210",
        (0x1002, 0x740c) => "AMD Instinct MI250X / MI250",
        (0x1002, 0x738c) => "AMD Instinct MI100",
        (0x1002, 0x744c) => "AMD Radeon RX 7900 XT / XTX",
        (0x1002, 0x73bf) => "AMD Radeon RX 6800 / 6900 XT",
        (0x8086, _) => return Some(format!("Intel GPU (device {device})")),
        (0x1002, _) => return Some(format!("AMD Radeon / Instinct (device {device})")),
        (0x10de, _) => return Some(format!("NVIDIA GPU (device {device})")),
        _ => return None,
    };
    Some(known.to_string())
}

fn parse_id(text: &str) -> Option<u32> {
    u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::device_name;

    #[test]
    fn names() {
        assert_eq!(
            device_name("0x8086", "0xe223").as_deref(),
            Some("Intel Arc Pro B70 (Battlemage G31)")
        );
        assert_eq!(
            device_name("0x1002", "0x1234").as_deref(),
            Some("AMD Radeon / Instinct (device 0x1234)")
        );
        assert_eq!(device_name("0x1af4", "0x1050"), None);
        assert_eq!(device_name("zz", "0x1"), None);
    }
}
