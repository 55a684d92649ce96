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
/// RssShmem. `reclaimable_pool` is the TTM pool the kernel counts as GPUReclaim: free pages the
/// shrinker takes back, named so and never added. `other_unaccounted` is the residual beyond the
/// GPU page counter and that pool: shown, never added.
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
    /// GPUReclaim: TTM pool pages the shrinker can take back (Linux 7.1+); reclaimable, so not
    /// part of `bytes`, and not in `other_unaccounted` either.
    #[serde(default)]
    pub reclaimable_pool: Option<u64>,
    /// With a GPU page counter: the unaccounted residual beyond it and the reclaimable pool (not
    /// part of `bytes`).
    pub other_unaccounted: Option<u64>,
}

/// A GPU page counter whose value cannot be true (above MemTotal): a kernel accounting fault,
/// reported and never used for driver-held memory or a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterFault {
    /// The counter.
    pub counter: GpuCounter,
    /// Its value.
    pub bytes: u64,
    /// MemTotal it exceeds.
    pub mem_total: u64,
}

/// The kernel's GPU page counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuCounter {
    /// GPUActive / nr_gpu_active: pages in GPU objects.
    #[serde(rename = "GPUActive")]
    Active,
    /// GPUReclaim / nr_gpu_reclaim: pooled pages the shrinker can take back.
    #[serde(rename = "GPUReclaim")]
    Reclaim,
}

impl GpuCounter {
    /// The meminfo name.
    pub fn as_str(self) -> &'static str {
        match self {
            GpuCounter::Active => "GPUActive",
            GpuCounter::Reclaim => "GPUReclaim",
        }
    }
}

impl CounterFault {
    /// `kernel counter fault: GPUReclaim 40.0 GiB exceeds MemTotal 30.5 GiB (not used)`.
    pub fn sentence(&self) -> String {
        format!(
            "kernel counter fault: {} {} exceeds MemTotal {}, which no counter can; not used",
            self.counter.as_str(),
            human_bytes(self.bytes),
            human_bytes(self.mem_total)
        )
    }
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
    /// GPU page counters above MemTotal: kernel faults, never used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counter_faults: Vec<CounterFault>,
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
        let faulty = |c: GpuCounter| self.counter_faults.iter().any(|f| f.counter == c);
        let active = self.gpu_active.filter(|_| !faulty(GpuCounter::Active));
        let counter = match self
            .gpu_active_source
            .as_deref()
            .and_then(HeldCounter::parse)
        {
            Some(c) if active.is_some() => c,
            _ if self.unaccounted.is_some() => HeldCounter::Unaccounted,
            _ => return None,
        };
        let counter_bytes = match counter {
            HeldCounter::Unaccounted => self.unaccounted?,
            _ => active?,
        };
        let pinned_shmem = self.pinned_shmem.unwrap_or(0);
        let reclaimable_pool = match counter {
            HeldCounter::Unaccounted => None,
            _ => self.gpu_reclaim.filter(|_| !faulty(GpuCounter::Reclaim)),
        };
        let other_unaccounted = match counter {
            HeldCounter::Unaccounted => None,
            _ => self.unaccounted.map(|u| {
                u.saturating_sub(counter_bytes)
                    .saturating_sub(reclaimable_pool.unwrap_or(0))
            }),
        };
        Some(DriverHeld {
            bytes: counter_bytes.saturating_add(pinned_shmem),
            counter,
            counter_bytes,
            pinned_shmem,
            reclaimable_pool,
            other_unaccounted,
        })
    }
}

/// The GPU page counters above MemTotal.
fn counter_faults(
    mem_total: Option<u64>,
    active: Option<u64>,
    reclaim: Option<u64>,
) -> Vec<CounterFault> {
    let Some(total) = mem_total else {
        return Vec::new();
    };
    [(GpuCounter::Active, active), (GpuCounter::Reclaim, reclaim)]
        .into_iter()
        .filter_map(|(counter, v)| {
            v.filter(|b| *b > total).map(|bytes| CounterFault {
                counter,
                bytes,
                mem_total: total,
            })
        })
        .collect()
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
        counter_faults: counter_faults(get("MemTotal"), gpu_active, gpu_reclaim),
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

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;

    /// A snapshot whose meminfo holds `lines` (kB values).
    fn snap(lines: &[(&str, u64)]) -> Snapshot {
        Snapshot {
            page_size: 4096,
            meminfo: lines
                .iter()
                .map(|(k, v)| (k.to_string(), v * KIB))
                .collect(),
            ..Snapshot::default()
        }
    }

    /// AvengeMedia/dgop#38 (Linux 7.1.1, amdgpu): MemTotal 63411580 kB, GPUActive 81108 kB,
    /// GPUReclaim 24407784 kB. The pool is named reclaimable and is neither driver-held nor
    /// "other unaccounted"; MemFree is chosen so that nothing else is unexplained.
    #[test]
    fn the_ttm_pool_is_named_reclaimable_never_held() {
        let total = 63_411_580;
        let (active, reclaim) = (81_108, 24_407_784);
        let free = total - active - reclaim - 1_000_000;
        let h = host_totals(&snap(&[
            ("MemTotal", total),
            ("MemFree", free),
            ("AnonPages", 1_000_000),
            ("GPUActive", active),
            ("GPUReclaim", reclaim),
        ]));
        assert!(h.counter_faults.is_empty());
        let held = h.driver_held().unwrap();
        assert_eq!(held.bytes, active * KIB);
        assert_eq!(held.reclaimable_pool, Some(reclaim * KIB));
        assert_eq!(held.other_unaccounted, Some(0));
    }

    /// dgop#44 reports GPUReclaim above MemTotal on 7.2.5; a GPUActive above it is as
    /// impossible. Either is a fault: reported, and never used for driver-held memory.
    #[test]
    fn a_counter_above_mem_total_is_a_fault_and_not_used() {
        let total = 31_997_424;
        let h = host_totals(&snap(&[
            ("MemTotal", total),
            ("MemFree", total - 3_000_000),
            ("AnonPages", 1_000_000),
            ("GPUActive", 500_000),
            ("GPUReclaim", total + 1),
        ]));
        assert_eq!(
            h.counter_faults,
            [CounterFault {
                counter: GpuCounter::Reclaim,
                bytes: (total + 1) * KIB,
                mem_total: total * KIB,
            }]
        );
        let held = h.driver_held().unwrap();
        assert_eq!(
            (held.counter, held.bytes),
            (HeldCounter::GpuActive, 500_000 * KIB)
        );
        assert_eq!(held.reclaimable_pool, None);
        assert!(h.counter_faults[0]
            .sentence()
            .starts_with("kernel counter fault: GPUReclaim"));

        let h = host_totals(&snap(&[
            ("MemTotal", total),
            ("MemFree", total - 3_000_000),
            ("AnonPages", 1_000_000),
            ("GPUActive", total * 2),
        ]));
        assert_eq!(h.counter_faults[0].counter, GpuCounter::Active);
        let held = h.driver_held().unwrap();
        assert_eq!(held.counter, HeldCounter::Unaccounted);
        assert_eq!(held.bytes, 2_000_000 * KIB);
    }
}
