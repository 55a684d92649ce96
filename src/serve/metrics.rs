//! The metric families (their names are part of gpuledger's contract; README lists them).
//!
//! Cardinality is bounded: a process whose resident GPU bytes (all devices and regions) are below
//! `min_process_bytes` is folded into `pid="other"`, and after `max_process_series` per-process
//! series every further process is folded there too.

use super::family::{Labels, SortedGauges};
use crate::findings::Finding;
use crate::ledger::{Ledger, ProcessRow};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

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

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// Renders every metric for one ledger in OpenMetrics text. Series come out sorted by label set,
/// the same order on every scrape; label values are escaped by prometheus-client's encoder.
pub fn render_metrics(ledger: &Ledger, findings: &[Finding], opts: &MetricsOptions) -> String {
    let mut reg = Registry::default();
    reg.register(
        "gpuledger_host_memory_bytes",
        "Host memory counters: total, available, gpu_active, gpu_reclaim, unaccounted",
        host_gauges(ledger),
    );
    reg.register(
        "gpuledger_driver_held_bytes",
        "Driver-held host memory by part (kernel_counter, pinned_shmem); counter names the kernel counter it starts from; the parts add up to the total",
        driver_held_gauges(ledger),
    );
    reg.register(
        "gpuledger_device_info",
        "One series per GPU device, value 1",
        device_gauges(ledger),
    );
    reg.register(
        "gpuledger_device_memory_bytes",
        "Device memory regions as the driver, NVML or dmem.capacity state them; kind is total or used; absent when unknown",
        device_memory_gauges(ledger),
    );
    reg.register(
        "gpuledger_process_memory_bytes",
        "GPU memory per process, device and region; kind is resident, total or shared",
        process_gauges(ledger, opts),
    );
    let (count, bytes) = finding_gauges(findings);
    reg.register(
        "gpuledger_findings",
        "Number of current findings by kind and severity",
        count,
    );
    reg.register(
        "gpuledger_finding_bytes",
        "Bytes behind each current finding",
        bytes,
    );
    reg.register(
        "gpuledger_known_issue",
        "One series per entry of the known-issues base that applies to this machine, value 1; severity is warning (versions and devices match) or critical (and its finding is present)",
        known_issue_gauges(findings),
    );
    let mut ts = SortedGauges::default();
    ts.set(Vec::new(), ledger.time_ms / 1000);
    reg.register(
        "gpuledger_sample_timestamp_seconds",
        "Time of the sample these metrics come from",
        ts,
    );
    let mut out = String::new();
    // Writing into a String only fails if an encoder impl fails, and ours never do; an empty
    // body would make the scrape fail loudly rather than serve half a page.
    if encode(&mut out, &reg).is_err() {
        out.clear();
    }
    out
}

fn host_gauges(ledger: &Ledger) -> SortedGauges {
    let mut host = SortedGauges::default();
    let h = &ledger.host;
    for (kind, v) in [
        ("total", h.mem_total),
        ("available", h.mem_available),
        ("gpu_active", h.gpu_active),
        ("gpu_reclaim", h.gpu_reclaim),
        ("unaccounted", h.unaccounted),
    ] {
        if let Some(v) = v {
            host.set(l(&[("kind", kind.into())]), v);
        }
    }
    host
}

fn driver_held_gauges(ledger: &Ledger) -> SortedGauges {
    let mut held = SortedGauges::default();
    if let Some(e) = ledger.host.driver_held() {
        for (part, v) in [
            ("kernel_counter", e.counter_bytes),
            ("pinned_shmem", e.pinned_shmem),
        ] {
            held.set(
                l(&[
                    ("part", part.into()),
                    ("counter", e.counter.as_str().into()),
                ]),
                v,
            );
        }
    }
    held
}

fn device_memory_gauges(ledger: &Ledger) -> SortedGauges {
    let mut mem = SortedGauges::default();
    for d in &ledger.devices {
        for r in d.memory(&ledger.dmem_capacity) {
            for (kind, v) in [("total", r.total), ("used", r.used)] {
                let Some(v) = v else { continue };
                let labels = l(&[
                    ("device", d.id.clone()),
                    ("region", r.region.clone()),
                    ("kind", kind.into()),
                ]);
                mem.set(labels, v);
            }
        }
    }
    mem
}

fn device_gauges(ledger: &Ledger) -> SortedGauges {
    let mut info = SortedGauges::default();
    for d in &ledger.devices {
        let labels = l(&[
            ("device", d.id.clone()),
            ("driver", opt(&d.driver)),
            ("vendor", opt(&d.vendor)),
            ("device_id", opt(&d.device)),
            ("name", opt(&d.name)),
        ]);
        info.set(labels, 1);
    }
    info
}

fn process_gauges(ledger: &Ledger, opts: &MetricsOptions) -> SortedGauges {
    let mut mem = SortedGauges::default();
    let mut series = 0usize;
    for p in &ledger.processes {
        let resident = p
            .usage
            .iter()
            .filter_map(|u| u.resident)
            .fold(0u64, u64::saturating_add);
        let values: usize = p
            .usage
            .iter()
            .map(|u| [u.resident, u.total, u.shared].iter().flatten().count())
            .sum();
        let keep = resident >= opts.min_process_bytes && series + values <= opts.max_process_series;
        for u in &p.usage {
            for (kind, v) in [
                ("resident", u.resident),
                ("total", u.total),
                ("shared", u.shared),
            ] {
                let Some(v) = v else { continue };
                let mut labels = identity(p, keep);
                labels.extend(l(&[
                    ("device", u.device.clone()),
                    ("region", u.region.clone()),
                    ("class", u.class.as_str().into()),
                    ("kind", kind.into()),
                ]));
                // Job labels only where present, and only on kept series (cardinality).
                if keep {
                    let job = [
                        ("namespace", &p.labels.namespace),
                        ("pod", &p.labels.pod),
                        ("pod_name", &p.labels.pod_name),
                        ("container", &p.labels.container),
                        ("job", &p.labels.job),
                    ];
                    for (k, v) in job {
                        if let Some(v) = v {
                            labels.push((k.to_string(), v.clone()));
                        }
                    }
                    series += 1;
                }
                mem.add(labels, v);
            }
        }
    }
    mem
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

fn finding_gauges(findings: &[Finding]) -> (SortedGauges, SortedGauges) {
    let (mut count, mut bytes) = (SortedGauges::default(), SortedGauges::default());
    for f in findings {
        let kind = l(&[
            ("kind", f.kind.as_str().into()),
            ("severity", f.severity.as_str().into()),
        ]);
        count.add(kind.clone(), 1);
        let backing = f
            .backing
            .and_then(|b| serde_json::to_value(b).ok())
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let mut labels = kind;
        labels.extend(l(&[
            ("pid", f.pid.map(|p| p.to_string()).unwrap_or_default()),
            ("rank", f.rank.map(|r| r.to_string()).unwrap_or_default()),
            ("device", opt(&f.device)),
            ("peer", opt(&f.peer)),
            ("backing", backing),
        ]));
        bytes.set(labels, f.bytes);
    }
    (count, bytes)
}

fn known_issue_gauges(findings: &[Finding]) -> SortedGauges {
    let mut known = SortedGauges::default();
    for f in findings {
        if let Some(id) = &f.issue {
            let labels = l(&[
                ("issue", id.clone()),
                ("severity", f.severity.as_str().into()),
            ]);
            known.set(labels, 1);
        }
    }
    known
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

    #[test]
    fn series_come_out_sorted_and_the_same_every_time() {
        let ledger = Ledger {
            processes: (1..40).map(|pid| row(pid, 1 << 30)).collect(),
            ..Default::default()
        };
        let first = render_metrics(&ledger, &[], &MetricsOptions::default());
        for _ in 0..5 {
            assert_eq!(
                render_metrics(&ledger, &[], &MetricsOptions::default()),
                first
            );
        }
        let pids: Vec<&str> = first
            .lines()
            .filter_map(|l| l.strip_prefix("gpuledger_process_memory_bytes{pid=\""))
            .filter_map(|l| l.split('"').next())
            .collect();
        let mut sorted = pids.clone();
        sorted.sort();
        assert_eq!(pids.len(), 39);
        assert_eq!(pids, sorted);
    }
}
