//! Host totals: MemTotal, MemAvailable, GPU page counters, the unaccounted residual, and the one
//! definition of driver-held host memory built from them.

use crate::snapshot::Snapshot;
use crate::units::human_bytes;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The kernel counter that driver-held host memory starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HeldCounter {
    /// `/proc/meminfo` GPUActive (TTM pool pages in GPU objects; Linux 7.1+).
    #[serde(rename = "GPUActive")]
    GpuActive,
    /// `/proc/vmstat` nr_gpu_active × page size.
    #[serde(rename = "nr_gpu_active")]
    NrGpuActive,
    /// No GPU page counter: the residual that no meminfo counter explains.
    #[serde(rename = "unaccounted")]
    Unaccounted,
}

impl HeldCounter {
    /// The counter's name as the kernel (or docs/DESIGN.md, for the residual) spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            HeldCounter::GpuActive => "GPUActive",
            HeldCounter::NrGpuActive => "nr_gpu_active",
            HeldCounter::Unaccounted => "unaccounted",
        }
    }

    /// Reads a name written by [`HeldCounter::as_str`].
    pub fn parse(name: &str) -> Option<HeldCounter> {
        [Self::GpuActive, Self::NrGpuActive, Self::Unaccounted]
            .into_iter()
            .find(|c| c.as_str() == name)
    }
}

impl fmt::Display for HeldCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Driver-held host memory, with its parts.
///
/// `bytes` = `counter_bytes` + `pinned_shmem`. The parts never overlap: GPUActive counts TTM pool
/// pages only; the unaccounted residual subtracts Cached, which holds Shmem; and NVIDIA pinned
/// host memory (cudaHostAlloc) sits in Shmem, where gpuledger attributes it per process from
/// RssShmem. `other_unaccounted` is the residual beyond the GPU page counter: shown, never added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverHeld {
    /// The total.
    pub bytes: u64,
    /// The kernel counter used.
    pub counter: HeldCounter,
    /// Its value.
    pub counter_bytes: u64,
    /// Pinned host memory filed under Shmem and attributed per process (NVIDIA `pinned-shmem`).
    pub pinned_shmem: u64,
    /// With a GPU page counter: the unaccounted residual beyond it (not part of `bytes`).
    pub other_unaccounted: Option<u64>,
}

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
    /// Memory the kernel handed out that no meminfo counter explains (docs/DESIGN.md formula).
    pub unaccounted: Option<u64>,
    /// Pinned host memory attributed per process under Shmem (NVIDIA `pinned-shmem`), summed.
    #[serde(default)]
    pub pinned_shmem: Option<u64>,
}

impl DriverHeld {
    /// `GPUActive 25.9 GiB`, or with attributed pinned shmem
    /// `26.0 GiB = unaccounted 0.3 GiB + pinned shmem 25.7 GiB`.
    pub fn parts(&self) -> String {
        let counter = format!("{} {}", self.counter, human_bytes(self.counter_bytes));
        match self.pinned_shmem {
            0 => counter,
            p => format!(
                "{} = {counter} + pinned shmem {}",
                human_bytes(self.bytes),
                human_bytes(p)
            ),
        }
    }
}

impl HostTotals {
    /// Driver-held host memory (docs/DESIGN.md's one definition): the GPU page counter, else the
    /// unaccounted residual, plus attributed pinned shmem. `None` without host counters.
    pub fn driver_held(&self) -> Option<DriverHeld> {
        let counter = match self
            .gpu_active_source
            .as_deref()
            .and_then(HeldCounter::parse)
        {
            Some(c) if self.gpu_active.is_some() => c,
            _ if self.unaccounted.is_some() => HeldCounter::Unaccounted,
            _ => return None,
        };
        let counter_bytes = match counter {
            HeldCounter::Unaccounted => self.unaccounted?,
            _ => self.gpu_active?,
        };
        let pinned_shmem = self.pinned_shmem.unwrap_or(0);
        let other_unaccounted = match counter {
            HeldCounter::Unaccounted => None,
            _ => self.unaccounted.map(|u| u.saturating_sub(counter_bytes)),
        };
        Some(DriverHeld {
            bytes: counter_bytes.saturating_add(pinned_shmem),
            counter,
            counter_bytes,
            pinned_shmem,
            other_unaccounted,
        })
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
    let pinned: Vec<u64> = s.processes.iter().filter_map(|p| p.pinned_shmem).collect();
    HostTotals {
        pinned_shmem: (!pinned.is_empty())
            .then(|| pinned.iter().fold(0u64, |a, b| a.saturating_add(*b))),
        mem_total: get("MemTotal"),
        mem_available: get("MemAvailable"),
        gpu_active,
        gpu_reclaim,
        gpu_active_source,
        unaccounted,
    }
}
