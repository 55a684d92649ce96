//! The per-process families: resident, total and shared GPU memory per process, device and region,
//! each its own metric name so that every family sums (resident over regions, devices or a job's
//! processes) without a `kind` label to filter first.
//!
//! Cardinality is bounded: a process whose resident GPU bytes (all devices and regions) are below
//! `min_process_bytes` is folded into `pid="other"`, and after `max_process_series` per-process
//! series every further process is folded there too. Zero values are not written: a process's
//! empty regions would be most of the exposition and say nothing.

use super::family::{l, Labels, SortedGauges};
use crate::ledger::{Ledger, ProcessRow, Usage};

/// The three per-process families.
#[derive(Debug, Default)]
pub(crate) struct ProcessFamilies {
    /// `gpuledger_process_memory_bytes`: resident bytes.
    pub resident: SortedGauges,
    /// `gpuledger_process_memory_total_bytes`: bytes of every buffer the process holds.
    pub total: SortedGauges,
    /// `gpuledger_process_memory_shared_bytes`: the part shared with other processes.
    pub shared: SortedGauges,
}

/// Cardinality bounds.
#[derive(Debug, Clone, Copy)]
pub struct MetricsOptions {
    /// Processes below this many resident GPU bytes are folded into `pid="other"`.
    pub min_process_bytes: u64,
    /// At most this many per-process series; the rest are folded into `pid="other"`.
    pub max_process_series: usize,
}

impl Default for MetricsOptions {
    fn default() -> Self {
        MetricsOptions {
            min_process_bytes: 64 << 20,
            max_process_series: 5000,
        }
    }
}

/// The families of every process of `ledger`.
pub(crate) fn process_families(ledger: &Ledger, opts: &MetricsOptions) -> ProcessFamilies {
    let mut fam = ProcessFamilies::default();
    let mut series = 0usize;
    for p in &ledger.processes {
        let resident = p
            .usage
            .iter()
            .filter_map(|u| u.resident)
            .fold(0u64, u64::saturating_add);
        let count: usize = p.usage.iter().map(|u| values(u).count()).sum();
        let keep = resident >= opts.min_process_bytes && series + count <= opts.max_process_series;
        for u in &p.usage {
            for (kind, v) in values(u) {
                let mut labels = identity(p, keep);
                labels.extend(l(&[
                    ("device", u.device.clone()),
                    ("region", u.region.clone()),
                    ("class", u.class.as_str().into()),
                ]));
                // Job labels only where present, and only on kept series (cardinality).
                if keep {
                    labels.extend(job_labels(p));
                    series += 1;
                }
                let family = match kind {
                    Kind::Resident => &mut fam.resident,
                    Kind::Total => &mut fam.total,
                    Kind::Shared => &mut fam.shared,
                };
                family.add(labels, v);
            }
        }
    }
    fam
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Resident,
    Total,
    Shared,
}

/// The non-zero values of one usage row, by family.
fn values(u: &Usage) -> impl Iterator<Item = (Kind, u64)> {
    [
        (Kind::Resident, u.resident),
        (Kind::Total, u.total),
        (Kind::Shared, u.shared),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k, v.filter(|v| *v > 0)?)))
}

fn job_labels(p: &ProcessRow) -> Labels {
    [
        ("namespace", &p.labels.namespace),
        ("pod", &p.labels.pod),
        ("pod_name", &p.labels.pod_name),
        ("container", &p.labels.container),
        ("job", &p.labels.job),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k.to_string(), v.clone()?)))
    .collect()
}

/// pid, comm and rank of a kept process, or the `other` bucket's.
fn identity(p: &ProcessRow, keep: bool) -> Labels {
    if keep {
        l(&[
            ("pid", p.pid.to_string()),
            ("comm", p.comm.clone()),
            ("rank", p.rank.map(|r| r.to_string()).unwrap_or_default()),
        ])
    } else {
        l(&[
            ("pid", "other".into()),
            ("comm", "other".into()),
            ("rank", String::new()),
        ])
    }
}
