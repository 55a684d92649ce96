//! Host memory counters from `/proc/meminfo` and `/proc/vmstat`.
//!
//! ref: Documentation/filesystems/proc.rst (meminfo; `GPUActive`/`GPUReclaim` since Linux 7.1,
//! mm/vmstat.c `nr_gpu_active`/`nr_gpu_reclaim`). meminfo values are `kB` (KiB) except the
//! `HugePages_*` counts, which have no unit.

use crate::layout;
use crate::root::Root;
use std::collections::BTreeMap;
use std::io;

/// The raw text of `/proc/meminfo`.
pub fn read_meminfo(root: &Root) -> io::Result<String> {
    root.read_string(layout::MEMINFO)
}

/// The raw text of `/proc/vmstat`.
pub fn read_vmstat(root: &Root) -> io::Result<String> {
    root.read_string(layout::VMSTAT)
}

/// The raw text of `/proc/version`.
pub fn read_version(root: &Root) -> io::Result<String> {
    root.read_string(layout::VERSION)
}

/// Parsed `key: value` counters; meminfo values converted to bytes where they carry `kB`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Counter name → value (bytes for `kB` lines, plain numbers otherwise).
    pub values: BTreeMap<String, u64>,
    /// Lines that did not parse.
    pub malformed: u32,
}

/// Parses `/proc/meminfo` (`MemTotal:       65536000 kB`).
pub fn parse_meminfo(text: &str) -> Counters {
    let mut out = Counters::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let parsed = line.split_once(':').and_then(|(k, v)| {
            let mut parts = v.split_whitespace();
            let n: u64 = parts.next()?.parse().ok()?;
            let value = match (parts.next(), parts.next()) {
                (None, _) => n,
                (Some("kB"), None) => n.checked_mul(1024)?,
                _ => return None,
            };
            let key = k.trim();
            (!key.is_empty() && !key.contains(char::is_whitespace))
                .then(|| (key.to_string(), value))
        });
        match parsed {
            Some((k, v)) => {
                out.values.insert(k, v);
            }
            None => out.malformed += 1,
        }
    }
    out
}

/// Parses `/proc/vmstat` (`nr_gpu_active 1234`), keeping only the names `keep` accepts.
pub fn parse_vmstat(text: &str, keep: impl Fn(&str) -> bool) -> Counters {
    let mut out = Counters::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.split_whitespace();
        match (
            parts.next(),
            parts.next().and_then(|v| v.parse::<u64>().ok()),
            parts.next(),
        ) {
            (Some(k), Some(v), None) => {
                if keep(k) {
                    out.values.insert(k.to_string(), v);
                }
            }
            _ => out.malformed += 1,
        }
    }
    out
}

/// The vmstat counters gpuledger keeps: the GPU page counters.
pub fn is_gpu_vmstat_key(key: &str) -> bool {
    key.starts_with("nr_gpu_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn meminfo_units_and_counts() {
        let c = parse_meminfo(
            "MemTotal:       65536000 kB\nGPUActive:      27158118 kB\nHugePages_Total:       0\n\
Hugepagesize:       2048 kB\nbroken line\nMemFree: lots kB\n",
        );
        assert_eq!(c.values["MemTotal"], 65536000 * 1024);
        assert_eq!(c.values["GPUActive"], 27158118 * 1024);
        assert_eq!(c.values["HugePages_Total"], 0);
        assert_eq!(c.values["Hugepagesize"], 2048 * 1024);
        assert_eq!(c.malformed, 2);
    }

    #[test]
    fn vmstat_keeps_gpu_counters() {
        let c = parse_vmstat(
            "nr_free_pages 100\nnr_gpu_active 42\nnr_gpu_reclaim 7\nbad\n",
            is_gpu_vmstat_key,
        );
        assert_eq!(c.values.len(), 2);
        assert_eq!(c.values["nr_gpu_active"], 42);
        assert_eq!(c.malformed, 1);
    }

    proptest! {
        #[test]
        fn meminfo_never_panics(s in "(?s).{0,300}") {
            let _ = parse_meminfo(&s);
            let _ = parse_vmstat(&s, |_| true);
        }

        #[test]
        fn kb_lines_round_trip(key in "[A-Za-z_()]{1,16}", n in 0u64..(1 << 40)) {
            let c = parse_meminfo(&format!("{key}:   {n} kB\n"));
            prop_assert_eq!(c.values.get(&key).copied(), Some(n * 1024));
        }
    }
}
