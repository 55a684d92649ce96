//! The per-process families: resident, total and shared GPU memory per process, device and region,
//! each its own metric name so that every family sums (resident over regions, devices or a job's
//! processes) without a `kind` label to filter first.
//!
//! Cardinality is bounded: a process whose resident GPU bytes (all devices and regions) are below
//! `min_process_bytes` is folded into `pid="other"`, and after `max_process_series` per-process
//! series every further process is folded there too. Zero values are not written: a process's
//! empty regions would be most of the exposition and say nothing. With [`Series::PerJob`] no
//! series carries `pid`: a job's processes of one rank add up into one series, so a restart does
//! not start new series.
//!
//! Kubernetes labels are named so that they never collide with the target labels the Prometheus
//! Operator adds (`namespace`, `pod`, `container`, `service`, `endpoint`): `k8s_namespace` and
//! `k8s_pod` (the pod's name) where the kubelet's log directory names the pod, else only
//! `k8s_pod_uid`; `k8s_container_id` (the runtime's container id, all the cgroup path gives).

use super::family::{l, Labels, SortedGauges, SortedRatios};
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

/// `gpuledger_process_engine_busy_ratio`: each process's busy share of each engine class of
/// each device since the previous sample (0–1, divided by the class's capacity), for the
/// processes whose driver gives engine counters.
pub(crate) fn engine_busy(ledger: &Ledger, series: Series) -> SortedRatios {
    let mut fam = SortedRatios::default();
    for p in &ledger.processes {
        for e in &p.engines {
            let mut labels = identity(p, true, series);
            labels.extend(l(&[
                ("device", e.device.clone()),
                ("engine", e.engine.clone()),
            ]));
            labels.extend(job_labels(p, series));
            fam.add(labels, e.percent() / 100.0);
        }
    }
    fam
}

/// Which series the per-process families (and `gpuledger_finding_bytes`) are keyed by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Series {
    /// One series per process: `pid`, `comm`, `rank` and the job labels.
    #[default]
    PerProcess,
    /// No `pid`: one series per job, rank and comm (the processes of one add up).
    PerJob,
}

/// Cardinality bounds.
#[derive(Debug, Clone, Copy)]
pub struct MetricsOptions {
    /// Processes below this many resident GPU bytes are folded into `pid="other"`.
    pub min_process_bytes: u64,
    /// At most this many per-process series; the rest are folded into `pid="other"`.
    pub max_process_series: usize,
    /// Per process, or per job without `pid`.
    pub series: Series,
}

impl Default for MetricsOptions {
    fn default() -> Self {
        MetricsOptions {
            min_process_bytes: 64 << 20,
            max_process_series: 5000,
            series: Series::PerProcess,
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
                let mut labels = identity(p, keep, opts.series);
                labels.extend(l(&[
                    ("device", u.device.clone()),
                    ("region", u.region.clone()),
                    ("class", u.class.as_str().into()),
                ]));
                // Job labels only where present, and only on kept series (cardinality).
                if keep {
                    labels.extend(job_labels(p, opts.series));
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

/// A process's job labels, those it has: the pod's namespace and name (or only its uid where no
/// name is known), the container id (per process only: a restarted container gets a new one),
/// the Slurm job.
pub(crate) fn job_labels(p: &ProcessRow, series: Series) -> Labels {
    let j = &p.labels;
    let named = j.pod_name.is_some();
    let per_process = series == Series::PerProcess;
    [
        ("k8s_namespace", j.namespace.as_ref().filter(|_| named)),
        ("k8s_pod", j.pod_name.as_ref()),
        ("k8s_pod_uid", j.pod.as_ref().filter(|_| !named)),
        (
            "k8s_container_id",
            j.container.as_ref().filter(|_| per_process),
        ),
        ("job", j.job.as_ref()),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k.to_string(), v?.clone())))
    .collect()
}

/// pid (per process only), comm and rank of a kept process, or the `other` bucket's.
fn identity(p: &ProcessRow, keep: bool, series: Series) -> Labels {
    let (pid, comm, rank) = if keep {
        let rank = p.rank.map(|r| r.to_string()).unwrap_or_default();
        (p.pid.to_string(), p.comm.clone(), rank)
    } else {
        ("other".into(), "other".into(), String::new())
    };
    match series {
        Series::PerProcess => l(&[("pid", pid), ("comm", comm), ("rank", rank)]),
        Series::PerJob => l(&[("comm", comm), ("rank", rank)]),
    }
}
