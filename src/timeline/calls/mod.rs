//! The counters cross-checked against the traced calls, and the calls of two runs compared.
//!
//! Counters say how much memory a process holds; the calls say how much it asked for. When a
//! driver pins more host memory than the job's calls asked for, that difference is itself the
//! bug class of compute-runtime#953 (docs/DESIGN.md, "API-level attribution").

use super::Peak;
use crate::recording::CallTable;
use gpuledger_trace_wire::{Api, Platform};
use serde::Serialize;
use std::collections::BTreeMap;

/// A difference below this share of the larger side is agreement.
pub const MARGIN_SHARE: f64 = 0.10;
/// A difference below this many bytes is agreement (page rounding, the allocator's headers).
pub const MARGIN_BYTES: u64 = 64 << 20;
/// Device memory a runtime makes without any memory call (context, modules, workspaces): the
/// H200's CUDA 13 context measured 0.61 GiB (tests/gpu/results/h200-2026-12-03-trace.txt).
pub const CONTEXT_ALLOWANCE: u64 = 1 << 30;

/// Which memory a check compares.
///
/// Host: HOST (which includes the ledger's rows of registered memory) against pinned and
/// registered host calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckClass {
    /// Device-local memory: counters' LOCAL against device, VMM and pool calls.
    Device,
    /// Host memory held for a GPU: counters' HOST against pinned host allocations.
    Host,
}

impl CheckClass {
    /// The name used in tables.
    pub fn name(self) -> &'static str {
        match self {
            CheckClass::Device => "device",
            CheckClass::Host => "host",
        }
    }
}

/// How a counter and the calls agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "agreement", content = "by")]
pub enum Agreement {
    /// Within the margin.
    Within,
    /// Within what a runtime's context explains (device memory only).
    Context,
    /// The counter shows more than the calls asked for, by this many bytes.
    CounterLarger(u64),
    /// The calls asked for more than the counter shows, by this many bytes.
    CallsLarger(u64),
}

/// One process × class: its counter's peak against its traced calls' peak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallCheck {
    /// Process.
    pub pid: u32,
    /// Which memory.
    pub class: CheckClass,
    /// The counter's peak (summed over the process's devices).
    pub counter_peak: u64,
    /// Bytes the traced calls held live at their peak.
    pub traced_peak: u64,
    /// Of `traced_peak`, host pages pinned in place (`cudaHostRegister`; host only): no kernel
    /// counter shows them, the ledger adds them from the calls.
    pub registered_peak: u64,
    /// The verdict.
    pub agreement: Agreement,
}

fn agreement(class: CheckClass, counter: u64, traced: u64) -> Agreement {
    let margin = MARGIN_BYTES.max((counter.max(traced) as f64 * MARGIN_SHARE) as u64);
    if counter.abs_diff(traced) <= margin {
        return Agreement::Within;
    }
    if counter > traced {
        if class == CheckClass::Device && counter - traced <= CONTEXT_ALLOWANCE + margin {
            return Agreement::Context;
        }
        return Agreement::CounterLarger(counter - traced);
    }
    Agreement::CallsLarger(traced - counter)
}

fn class_of(api: Api) -> Option<CheckClass> {
    match api {
        Api::Device | Api::Vmm | Api::Pooled => Some(CheckClass::Device),
        // Registered pages are in the ledger as the process's own host-class row (no kernel
        // counter shows them, ledger::traced), so the host counter holds them too.
        Api::HostPinned | Api::Registered => Some(CheckClass::Host),
        _ => None,
    }
}

/// Every traced process's counters against its calls, per class; processes the tracer saw
/// but no counter did are included (their counter peak is 0).
pub fn cross_check(peaks: &[Peak], calls: &CallTable) -> Vec<CallCheck> {
    let mut traced: BTreeMap<(u32, CheckClass), u64> = BTreeMap::new();
    let mut registered: BTreeMap<u32, u64> = BTreeMap::new();
    for r in &calls.rows {
        if r.api == Api::Registered {
            *registered.entry(r.pid).or_default() += r.peak_live;
        }
        if let Some(class) = class_of(r.api) {
            *traced.entry((r.pid, class)).or_default() += r.peak_live;
        }
    }
    traced
        .into_iter()
        .map(|((pid, class), traced_peak)| {
            let counter_peak = peaks
                .iter()
                .filter(|p| p.pid == pid)
                .map(|p| match class {
                    CheckClass::Device => p.device_local,
                    CheckClass::Host => p.host,
                })
                .sum();
            CallCheck {
                pid,
                class,
                counter_peak,
                traced_peak,
                registered_peak: match class {
                    CheckClass::Host => registered.get(&pid).copied().unwrap_or(0),
                    CheckClass::Device => 0,
                },
                agreement: agreement(class, counter_peak, traced_peak),
            }
        })
        .collect()
}

/// One API kind, summed over a run's processes and devices, in both runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallDiffRow {
    /// CUDA or Level Zero (JSON: `cuda` or `level_zero`).
    #[serde(serialize_with = "crate::recording::serialize_platform")]
    pub platform: Platform,
    /// API kind (JSON: its recording name).
    #[serde(serialize_with = "crate::recording::serialize_api")]
    pub api: Api,
    /// Calls in A and B.
    pub calls: [u64; 2],
    /// Bytes live at the peak in A and B (per process and device, summed).
    pub peak_live: [u64; 2],
    /// Failed calls in A and B.
    pub failed: [u64; 2],
    /// Whether each run was traced at all (an untraced run's zeros mean nothing).
    pub traced: [bool; 2],
}

impl CallDiffRow {
    /// When both runs were traced and only one made calls of this kind: (the run without
    /// them, the run with them, its index).
    pub fn only_one(&self) -> Option<(&'static str, &'static str, usize)> {
        if self.traced != [true, true] {
            return None;
        }
        match self.calls {
            [0, n] if n > 0 => Some(("A", "B", 1)),
            [n, 0] if n > 0 => Some(("B", "A", 0)),
            _ => None,
        }
    }
}

/// Whether a run's tracer was on (its zeros are real zeros).
fn was_traced(t: Option<&CallTable>) -> bool {
    t.is_some_and(|t| t.state.starts_with("on"))
}

/// A platform × API kind by its names, so that rows come in name order.
fn by_name(platform: Platform, api: Api) -> (&'static str, &'static str) {
    (platform.name(), api.name())
}

/// The calls of run A against run B, one row per platform × API kind either run made (in name
/// order); empty when neither run was traced.
pub fn diff_calls(a: Option<&CallTable>, b: Option<&CallTable>) -> Vec<CallDiffRow> {
    let traced = [was_traced(a), was_traced(b)];
    let mut rows: BTreeMap<(&'static str, &'static str), CallDiffRow> = BTreeMap::new();
    for (side, table) in [a, b].into_iter().enumerate() {
        for r in table.into_iter().flat_map(|t| &t.rows) {
            let row = rows
                .entry(by_name(r.platform, r.api))
                .or_insert_with(|| CallDiffRow {
                    platform: r.platform,
                    api: r.api,
                    calls: [0; 2],
                    peak_live: [0; 2],
                    failed: [0; 2],
                    traced,
                });
            row.calls[side] += r.calls;
            row.peak_live[side] += r.peak_live;
            row.failed[side] += r.failed.iter().map(|(_, n)| n).sum::<u64>();
        }
    }
    rows.into_values().collect()
}

/// One platform × API kind's bytes live over time, summed over processes and devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiLive {
    /// CUDA or Level Zero.
    pub platform: Platform,
    /// API kind.
    pub api: Api,
    /// (t_ms, live bytes) at each change, in time order.
    pub points: Vec<(u64, u64)>,
}

/// One platform × API kind's changes of live bytes: (t_ms, bytes added or taken away).
type Deltas = (Platform, Api, Vec<(u64, i128)>);

/// Bytes live over time per platform × API kind (in name order), summed over processes and
/// devices.
pub fn live_by_api(calls: &CallTable) -> Vec<ApiLive> {
    let mut deltas: BTreeMap<_, Deltas> = BTreeMap::new();
    for r in &calls.rows {
        let (_, _, d) = deltas
            .entry(by_name(r.platform, r.api))
            .or_insert_with(|| (r.platform, r.api, Vec::new()));
        let mut before = 0i128;
        for &(t, live) in &r.live {
            d.push((t, i128::from(live) - before));
            before = i128::from(live);
        }
    }
    deltas
        .into_values()
        .map(|(platform, api, mut d)| {
            d.sort_by_key(|(t, _)| *t);
            let mut live = 0i128;
            let mut points: Vec<(u64, u64)> = Vec::with_capacity(d.len());
            for (t, delta) in d {
                live += delta;
                let v = u64::try_from(live.max(0)).unwrap_or(u64::MAX);
                match points.last_mut() {
                    Some(last) if last.0 == t => last.1 = v,
                    _ => points.push((t, v)),
                }
            }
            ApiLive {
                platform,
                api,
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
