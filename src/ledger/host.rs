//! Host totals: MemTotal, MemAvailable, GPU page counters and the unaccounted residual.

use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

/// Host memory totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostTotals {
    /// MemTotal.
    pub mem_total: Option<u64>,
    /// MemAvailable.
    pub mem_available: Option<u64>,
    /// GPUActive (meminfo), else `nr_gpu_active` × page size.
    pub gpu_active: Option<u64>,
    /// GPUReclaim (meminfo), else `nr_gpu_reclaim` × page size.
    pub gpu_reclaim: Option<u64>,
    /// Which counter `gpu_active` came from.
    pub gpu_active_source: Option<String>,
    /// Memory the kernel handed out that no meminfo counter explains (DESIGN.md formula).
    pub unaccounted: Option<u64>,
}

impl HostTotals {
    /// Driver-held host memory and the counter it came from: GPUActive, nr_gpu_active, else the
    /// unaccounted residual.
    pub fn driver_held(&self) -> Option<(u64, &str)> {
        match (self.gpu_active, &self.gpu_active_source) {
            (Some(v), Some(src)) => Some((v, src.as_str())),
            _ => self.unaccounted.map(|u| (u, "unaccounted")),
        }
    }
}

pub(super) fn host_totals(s: &Snapshot) -> HostTotals {
    let m = &s.meminfo;
    let get = |k: &str| m.get(k).copied();
    let page = s.page_size.max(1);
    let (gpu_active, gpu_active_source) = match (get("GPUActive"), s.vmstat.get("nr_gpu_active")) {
        (Some(v), _) => (Some(v), Some("GPUActive".to_string())),
        (None, Some(p)) => (
            Some(p.saturating_mul(page)),
            Some("nr_gpu_active".to_string()),
        ),
        _ => (None, None),
    };
    let gpu_reclaim = get("GPUReclaim").or_else(|| {
        s.vmstat
            .get("nr_gpu_reclaim")
            .map(|p| p.saturating_mul(page))
    });
    let unaccounted = get("MemTotal").map(|total| {
        let used: u64 = [
            "MemFree",
            "Buffers",
            "Cached",
            "AnonPages",
            "Slab",
            "KernelStack",
            "PageTables",
            "SecPageTables",
            "VmallocUsed",
            "Percpu",
        ]
        .iter()
        .filter_map(|k| get(k))
        .fold(0u64, |a, b| a.saturating_add(b));
        let huge = get("HugePages_Total")
            .unwrap_or(0)
            .saturating_mul(get("Hugepagesize").unwrap_or(0));
        total.saturating_sub(used.saturating_add(huge))
    });
    HostTotals {
        mem_total: get("MemTotal"),
        mem_available: get("MemAvailable"),
        gpu_active,
        gpu_reclaim,
        gpu_active_source,
        unaccounted,
    }
}
