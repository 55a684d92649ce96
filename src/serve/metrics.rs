//! The metric families (their names are part of gpuledger's contract; README lists them).
//!
//! Cardinality is bounded: a process whose resident GPU bytes (all devices and regions) are below
//! `min_process_bytes` is folded into `pid="other"`, and after `max_process_series` per-process
//! series every further process is folded there too.

use crate::findings::Finding;
use crate::ledger::Ledger;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;

type Labels = Vec<(String, String)>;

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

fn l(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn gauge(reg: &mut Registry, name: &str, help: &str) -> Family<Labels, Gauge> {
    let f = Family::<Labels, Gauge>::default();
    reg.register(name, help, f.clone());
    f
}

/// Renders every metric for one ledger in OpenMetrics text.
pub fn render_metrics(ledger: &Ledger, findings: &[Finding], opts: &MetricsOptions) -> String {
    let mut reg = Registry::default();
    let host = gauge(
        &mut reg,
        "gpuledger_host_memory_bytes",
        "Host memory counters: total, available, gpu_active, gpu_reclaim, unaccounted",
    );
    let h = &ledger.host;
    for (kind, v) in [
        ("total", h.mem_total),
        ("available", h.mem_available),
        ("gpu_active", h.gpu_active),
        ("gpu_reclaim", h.gpu_reclaim),
        ("unaccounted", h.unaccounted),
    ] {
        if let Some(v) = v {
            host.get_or_create(&l(&[("kind", kind.into())]))
                .set(v as i64);
        }
    }
    let info = gauge(
        &mut reg,
        "gpuledger_device_info",
        "One series per GPU device, value 1",
    );
    for d in &ledger.devices {
        let o = |v: &Option<String>| v.clone().unwrap_or_default();
        info.get_or_create(&l(&[
            ("device", d.id.clone()),
            ("driver", o(&d.driver)),
            ("vendor", o(&d.vendor)),
            ("device_id", o(&d.device)),
            ("name", o(&d.name)),
        ]))
        .set(1);
    }
    let mem = gauge(
        &mut reg,
        "gpuledger_process_memory_bytes",
        "GPU memory per process, device and region; kind is resident, total or shared",
    );
    let mut folded: BTreeMap<Labels, u64> = BTreeMap::new();
    let mut series = 0usize;
    for p in &ledger.processes {
        let resident: u64 = p.usage.iter().filter_map(|u| u.resident).sum();
        let values: usize = p
            .usage
            .iter()
            .map(|u| {
                [u.resident, u.total, u.shared]
                    .iter()
                    .filter(|v| v.is_some())
                    .count()
            })
            .sum();
        let keep = resident >= opts.min_process_bytes && series + values <= opts.max_process_series;
        for u in &p.usage {
            for (kind, v) in [
                ("resident", u.resident),
                ("total", u.total),
                ("shared", u.shared),
            ] {
                let Some(v) = v else { continue };
                let (pid, comm, rank) = if keep {
                    (
                        p.pid.to_string(),
                        p.comm.clone(),
                        p.rank.map(|r| r.to_string()).unwrap_or_default(),
                    )
                } else {
                    ("other".to_string(), "other".to_string(), String::new())
                };
                let mut labels = l(&[
                    ("pid", pid),
                    ("comm", comm),
                    ("rank", rank),
                    ("device", u.device.clone()),
                    ("region", u.region.clone()),
                    ("class", u.class.as_str().into()),
                    ("kind", kind.into()),
                ]);
                // Job labels only where present, and only on kept series (cardinality).
                if keep {
                    let job = [
                        ("pod", &p.labels.pod),
                        ("container", &p.labels.container),
                        ("job", &p.labels.job),
                    ];
                    for (k, v) in job {
                        if let Some(v) = v {
                            labels.push((k.to_string(), v.clone()));
                        }
                    }
                }
                if keep {
                    mem.get_or_create(&labels).set(v as i64);
                    series += 1;
                } else {
                    *folded.entry(labels).or_default() += v;
                }
            }
        }
    }
    for (labels, v) in folded {
        mem.get_or_create(&labels).set(v as i64);
    }
    let count = gauge(
        &mut reg,
        "gpuledger_findings",
        "Number of current findings by kind and severity",
    );
    let bytes = gauge(
        &mut reg,
        "gpuledger_finding_bytes",
        "Bytes behind each current finding",
    );
    for f in findings {
        count
            .get_or_create(&l(&[
                ("kind", f.kind.as_str().into()),
                ("severity", f.severity.as_str().into()),
            ]))
            .inc();
        let o = |v: &Option<String>| v.clone().unwrap_or_default();
        let backing = f
            .backing
            .map(|b| {
                serde_json::to_value(b)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        bytes
            .get_or_create(&l(&[
                ("kind", f.kind.as_str().into()),
                ("severity", f.severity.as_str().into()),
                ("pid", f.pid.map(|p| p.to_string()).unwrap_or_default()),
                ("rank", f.rank.map(|r| r.to_string()).unwrap_or_default()),
                ("device", o(&f.device)),
                ("peer", o(&f.peer)),
                ("backing", backing),
            ]))
            .set(f.bytes as i64);
    }
    let ts = gauge(
        &mut reg,
        "gpuledger_sample_timestamp_seconds",
        "Time of the sample these metrics come from",
    );
    ts.get_or_create(&Vec::new())
        .set((ledger.time_ms / 1000) as i64);
    let mut out = String::new();
    encode(&mut out, &reg).expect("writing to a String cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{MemClass, ProcessRow, Usage};

    fn row(pid: u32, bytes: u64) -> ProcessRow {
        ProcessRow {
            pid,
            nspid: vec![],
            comm: format!("p{pid}"),
            cmdline: vec![],
            rank: None,
            local_rank: None,
            home_device: None,
            usage: vec![Usage {
                device: "0000:03:00.0".into(),
                region: "vram0".into(),
                class: MemClass::Device,
                source: Default::default(),
                total: None,
                resident: Some(bytes),
                shared: None,
                purgeable: None,
                active: None,
            }],
            env: Default::default(),
            shared_with_others: vec![],
            has_nvidia_fds: false,
            has_kfd_fd: false,
            cgroup: None,
            labels: Default::default(),
        }
    }

    #[test]
    fn small_processes_fold_into_other_and_series_are_capped() {
        let ledger = Ledger {
            processes: vec![
                row(1, 1 << 30),
                row(2, 1 << 20),
                row(3, 2 << 20),
                row(4, 2 << 30),
            ],
            ..Default::default()
        };
        let text = render_metrics(
            &ledger,
            &[],
            &MetricsOptions {
                min_process_bytes: 64 << 20,
                max_process_series: 1,
            },
        );
        assert!(text.contains("pid=\"1\""), "{text}");
        assert!(
            !text.contains("pid=\"2\"")
                && !text.contains("pid=\"3\"")
                && !text.contains("pid=\"4\""),
            "{text}"
        );
        let other = text.lines().find(|l| l.contains("pid=\"other\"")).unwrap();
        assert!(
            other.ends_with(&format!(" {}", (2u64 << 30) + (3 << 20))),
            "{other}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
