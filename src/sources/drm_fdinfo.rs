//! DRM client usage stats from `/proc/PID/fdinfo/N`.
//!
//! ref: Documentation/gpu/drm-usage-stats.rst; drivers/gpu/drm/drm_file.c (`drm_show_fdinfo`,
//! `drm_print_memory_stats`, `drm_fdinfo_print_size`). Lines are `key:<ws>value`; we split at the
//! first colon and trim, which also covers amdgpu's and v3d's `key: \tvalue`. Sizes carry an optional
//! unit (none = bytes, `KiB`, `MiB`; `GiB` accepted). Unknown keys are kept, malformed lines are
//! counted and skipped, and the whole file is parsed (no 4 KiB truncation).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Memory stats of one region as the driver printed them, in bytes. Absent keys are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionStats {
    /// `drm-total-<region>`: all requested buffers, backed or not.
    pub total: Option<u64>,
    /// `drm-shared-<region>`: buffers with more than one handle or a dma-buf.
    pub shared: Option<u64>,
    /// `drm-resident-<region>`: buffers whose backing store exists now.
    pub resident: Option<u64>,
    /// `drm-purgeable-<region>`: resident and purgeable.
    pub purgeable: Option<u64>,
    /// `drm-active-<region>`: in use on an engine (a subset of resident).
    pub active: Option<u64>,
    /// Legacy `drm-memory-<region>` (amdgpu): an alias of resident, never added on top.
    pub legacy_memory: Option<u64>,
}

impl RegionStats {
    /// Resident bytes: `drm-resident-*`, else the legacy alias `drm-memory-*`.
    pub fn resident_bytes(&self) -> Option<u64> {
        self.resident.or(self.legacy_memory)
    }
}

/// Engine utilisation counters of one engine class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineStats {
    /// `drm-engine-<e>`: busy time in ns.
    pub busy_ns: Option<u64>,
    /// `drm-engine-capacity-<e>`: number of identical engines (1 when absent).
    pub capacity: Option<u64>,
    /// `drm-cycles-<e>`: busy cycles.
    pub cycles: Option<u64>,
    /// `drm-total-cycles-<e>`: GPU timestamp advancing with the cycle counter.
    pub total_cycles: Option<u64>,
    /// `drm-maxfreq-<e>` in Hz.
    pub maxfreq_hz: Option<u64>,
    /// `drm-curfreq-<e>` in Hz (panfrost, panthor).
    pub curfreq_hz: Option<u64>,
}

/// One parsed fdinfo file of a DRM client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FdInfo {
    /// `drm-driver`, the only mandatory key; `None` means this fd is no DRM client.
    pub driver: Option<String>,
    /// `drm-pdev`: PCI slot such as `0000:03:00.0`.
    pub pdev: Option<String>,
    /// `drm-client-id`: one per open file description.
    pub client_id: Option<u64>,
    /// `drm-client-name`, set by userspace.
    pub client_name: Option<String>,
    /// Memory regions by raw name (`vram0`, `gtt`, `system0`, `memory`, …).
    pub regions: BTreeMap<String, RegionStats>,
    /// Engines by class name (`rcs`, `render`, `gfx`, …).
    pub engines: BTreeMap<String, EngineStats>,
    /// Every other key, verbatim: driver-specific (`amd-*`, `v3d-*`, `pasid`) and unknown ones.
    pub extras: BTreeMap<String, String>,
    /// Lines that were not `key: value` or whose value did not parse.
    pub malformed: u32,
}

/// Keys of the generic `/proc/PID/fdinfo` header, printed for every fd (fs/proc/fd.c); not kept.
const PROC_HEADER_KEYS: [&str; 4] = ["pos", "flags", "mnt_id", "ino"];

impl FdInfo {
    /// Parses the whole text of an fdinfo file.
    pub fn parse(text: &str) -> FdInfo {
        let mut info = FdInfo::default();
        for line in text.lines() {
            if line.trim().is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                info.malformed += 1;
                continue;
            };
            let key = key.trim();
            let value = value.trim();
            if key.is_empty() || key.contains(char::is_whitespace) {
                info.malformed += 1;
                continue;
            }
            if !info.apply(key, value) {
                info.malformed += 1;
            }
        }
        info
    }

    /// Whether the file described a DRM client.
    pub fn is_drm(&self) -> bool {
        self.driver.is_some()
    }

    /// Applies one key; returns false when its value is malformed.
    fn apply(&mut self, key: &str, value: &str) -> bool {
        match key {
            "drm-driver" => self.driver = Some(value.to_string()),
            "drm-pdev" => self.pdev = Some(value.to_string()),
            "drm-client-name" => self.client_name = Some(value.to_string()),
            "drm-client-id" => match value.parse() {
                Ok(id) => self.client_id = Some(id),
                Err(_) => return false,
            },
            k if PROC_HEADER_KEYS.contains(&k) => {}
            _ => return self.apply_prefixed(key, value),
        }
        true
    }

    fn apply_prefixed(&mut self, key: &str, value: &str) -> bool {
        // Longer prefixes first: `drm-engine-capacity-` before `drm-engine-`,
        // `drm-total-cycles-` before `drm-total-`.
        type Engine = fn(&mut EngineStats, u64);
        let engine_keys: [(&str, Engine, ValueKind); 6] = [
            (
                "drm-engine-capacity-",
                |e, v| e.capacity = Some(v),
                ValueKind::Plain,
            ),
            ("drm-engine-", |e, v| e.busy_ns = Some(v), ValueKind::Nanos),
            (
                "drm-total-cycles-",
                |e, v| e.total_cycles = Some(v),
                ValueKind::Plain,
            ),
            ("drm-cycles-", |e, v| e.cycles = Some(v), ValueKind::Plain),
            (
                "drm-maxfreq-",
                |e, v| e.maxfreq_hz = Some(v),
                ValueKind::Freq,
            ),
            (
                "drm-curfreq-",
                |e, v| e.curfreq_hz = Some(v),
                ValueKind::Freq,
            ),
        ];
        for (prefix, set, kind) in engine_keys {
            if let Some(name) = key.strip_prefix(prefix).filter(|n| !n.is_empty()) {
                let Some(v) = kind.parse(value) else {
                    return false;
                };
                set(self.engines.entry(name.to_string()).or_default(), v);
                return true;
            }
        }
        type Region = fn(&mut RegionStats, u64);
        let region_keys: [(&str, Region); 6] = [
            ("drm-total-", |r, v| r.total = Some(v)),
            ("drm-shared-", |r, v| r.shared = Some(v)),
            ("drm-resident-", |r, v| r.resident = Some(v)),
            ("drm-purgeable-", |r, v| r.purgeable = Some(v)),
            ("drm-active-", |r, v| r.active = Some(v)),
            ("drm-memory-", |r, v| r.legacy_memory = Some(v)),
        ];
        for (prefix, set) in region_keys {
            if let Some(name) = key.strip_prefix(prefix).filter(|n| !n.is_empty()) {
                let Some(v) = parse_memory(value) else {
                    return false;
                };
                set(self.regions.entry(name.to_string()).or_default(), v);
                return true;
            }
        }
        self.extras.insert(key.to_string(), value.to_string());
        true
    }

    /// A driver-specific size such as `amd-evicted-vram: 0 KiB`, in bytes.
    pub fn extra_bytes(&self, key: &str) -> Option<u64> {
        self.extras.get(key).and_then(|v| parse_memory(v))
    }
}

#[derive(Clone, Copy)]
enum ValueKind {
    Plain,
    Nanos,
    Freq,
}

impl ValueKind {
    fn parse(self, value: &str) -> Option<u64> {
        let (num, unit) = split_number(value)?;
        let mult = match (self, unit) {
            (ValueKind::Plain, "") => 1,
            (ValueKind::Nanos, "" | "ns") => 1,
            (ValueKind::Freq, "" | "Hz") => 1,
            (ValueKind::Freq, "KHz" | "kHz") => 1_000,
            (ValueKind::Freq, "MHz") => 1_000_000,
            _ => return None,
        };
        num.checked_mul(mult)
    }
}

fn split_number(value: &str) -> Option<(u64, &str)> {
    let end = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let num = value[..end].parse().ok()?;
    Some((num, value[end..].trim()))
}

/// Parses a memory value: `<uint>` (bytes) or `<uint> KiB|MiB|GiB`.
pub fn parse_memory(value: &str) -> Option<u64> {
    let (num, unit) = split_number(value.trim())?;
    let shift = match unit {
        "" | "B" => 0,
        "KiB" | "kB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return None,
    };
    num.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const XE_TWO_TILE: &str =
        "flags:\t02100002\ndrm-driver:\txe\ndrm-client-id:\t173\ndrm-pdev:\t0000:4d:00.0\n\
drm-total-gtt:\t264 KiB\ndrm-active-gtt:\t72 KiB\ndrm-resident-gtt:\t264 KiB\n\
drm-total-vram0:\t65072580 KiB\ndrm-resident-vram0:\t65072580 KiB\n\
drm-cycles-bcs:\t395\ndrm-total-cycles-bcs:\t24339816184\ndrm-engine-capacity-bcs:\t16\n";

    #[test]
    fn parses_xe() {
        let i = FdInfo::parse(XE_TWO_TILE);
        assert_eq!(i.driver.as_deref(), Some("xe"));
        assert_eq!(i.client_id, Some(173));
        assert_eq!(i.pdev.as_deref(), Some("0000:4d:00.0"));
        assert_eq!(i.regions["vram0"].resident, Some(65072580 * 1024));
        assert_eq!(i.regions["gtt"].active, Some(72 * 1024));
        let bcs = &i.engines["bcs"];
        assert_eq!(
            (bcs.cycles, bcs.total_cycles, bcs.capacity),
            (Some(395), Some(24339816184), Some(16))
        );
        assert!(!i.regions.contains_key("cycles-bcs"));
        assert_eq!(i.malformed, 0);
        assert!(
            i.extras.is_empty(),
            "header keys are not extras: {:?}",
            i.extras
        );
    }

    #[test]
    fn amdgpu_space_before_tab_and_legacy_alias() {
        let i = FdInfo::parse(
            "drm-driver:\tamdgpu\ndrm-memory-gtt: \t20480 KiB\ndrm-engine-gfx: \t19291217545 ns\n\
amd-evicted-vram:\t4 KiB\npasid:\t32785\n",
        );
        let gtt = &i.regions["gtt"];
        assert_eq!(gtt.resident, None);
        assert_eq!(gtt.resident_bytes(), Some(20480 * 1024));
        assert_eq!(i.engines["gfx"].busy_ns, Some(19291217545));
        assert_eq!(i.extra_bytes("amd-evicted-vram"), Some(4096));
        assert_eq!(i.extras["pasid"], "32785");
    }

    #[test]
    fn panfrost_freqs_and_hyphenated_names() {
        let i = FdInfo::parse(
            "drm-driver:\tpanfrost\ndrm-maxfreq-fragment:\t799999987 Hz\ndrm-curfreq-vertex-tiler:\t5 MHz\n\
drm-total-stolen-system0:\t1 MiB\n",
        );
        assert_eq!(i.engines["fragment"].maxfreq_hz, Some(799999987));
        assert_eq!(i.engines["vertex-tiler"].curfreq_hz, Some(5_000_000));
        assert_eq!(i.regions["stolen-system0"].total, Some(1 << 20));
    }

    #[test]
    fn malformed_lines_are_counted_not_fatal() {
        let i = FdInfo::parse(
            "drm-driver:\txe\nno colon here\ndrm-total-vram0:\tlots\nbad key:\t1\ndrm-client-id:\t-3\n\
drm-engine-rcs:\t12 parsecs\n",
        );
        assert_eq!(i.malformed, 5);
        assert_eq!(i.driver.as_deref(), Some("xe"));
        assert!(i.regions.is_empty());
    }

    #[test]
    fn units() {
        assert_eq!(parse_memory("0"), Some(0));
        assert_eq!(parse_memory("1000"), Some(1000));
        assert_eq!(parse_memory("16 MiB"), Some(16 << 20));
        assert_eq!(parse_memory("2 GiB"), Some(2 << 30));
        assert_eq!(parse_memory("2 TiB"), None);
        assert_eq!(parse_memory("18446744073709551615 KiB"), None);
    }

    #[test]
    fn non_drm_fd_has_no_driver() {
        let i = FdInfo::parse("pos:\t0\nflags:\t02000002\nmnt_id:\t25\nino:\t1030\n");
        assert!(!i.is_drm());
        assert_eq!(i.malformed, 0);
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panic(s in "(?s).{0,400}") {
            let _ = FdInfo::parse(&s);
        }

        #[test]
        fn memory_keys_round_trip(region in "[a-z][a-z0-9-]{0,12}", bytes in 0u64..(1 << 44)) {
            // Print the way drm_fdinfo_print_size does: the largest exact unit.
            let (mut v, mut unit) = (bytes, 0);
            while v != 0 && v % 1024 == 0 && unit < 2 { v /= 1024; unit += 1; }
            let units = ["", " KiB", " MiB"];
            let text = format!("drm-driver:\tx\ndrm-resident-{region}:\t{v}{}\n", units[unit]);
            let i = FdInfo::parse(&text);
            prop_assert_eq!(i.regions[&region].resident, Some(bytes));
            prop_assert_eq!(i.malformed, 0);
        }
    }
}
