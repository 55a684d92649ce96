//! The metric families (their names are part of gpuledger's contract; README lists them).
//!
//! Every family sums: a label never mixes values that cannot be added (total with available,
//! resident with shared); such values have their own metric names. Per-process and per-finding
//! series are written only when non-zero. Besides the sample, the exporter says what it is
//! (`gpuledger_build_info`) and how its scans go (duration, errors since it started).

use super::family::{l, FloatGauge, SortedCounters, SortedGauges};
use super::process_metrics::{engine_busy, job_labels, process_families};
pub use super::process_metrics::{MetricsOptions, Series};
use crate::findings::Finding;
use crate::ledger::Ledger;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

/// The exporter's own figures, kept across samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExporterStats {
    /// Seconds the last sample took (scan, attribution, findings, the snapshot JSON).
    pub scan_seconds: f64,
    /// Samples that failed since the exporter started (the last good one is still served).
    pub failed_samples: u64,
    /// Files the scans met but could not use (FIFOs, oversized, malformed), summed over samples.
    pub unusable_files: u64,
    /// Processes whose fd table could not be read (permission), summed over samples.
    pub unreadable_processes: u64,
}

impl ExporterStats {
    /// Adds one good sample's scan problems.
    pub fn count_scan(&mut self, stats: &crate::snapshot::ScanStats) {
        self.unusable_files = self
            .unusable_files
            .saturating_add(u64::from(stats.issues_total));
        self.unreadable_processes = self
            .unreadable_processes
            .saturating_add(u64::from(stats.unreadable));
    }
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// Renders every metric for one ledger in OpenMetrics text. Series come out sorted by label set,
/// the same order on every scrape; label values are escaped by prometheus-client's encoder.
pub fn render_metrics(
    ledger: &Ledger,
    findings: &[Finding],
    opts: &MetricsOptions,
    stats: &ExporterStats,
) -> String {
    let mut reg = Registry::default();
    register_host(&mut reg, ledger);
    reg.register(
        "gpuledger_device_info",
        "One series per GPU device, value 1",
        device_gauges(ledger),
    );
    let (total, used) = device_memory_gauges(ledger);
    reg.register(
        "gpuledger_device_memory_total_bytes",
        "Size of each device memory region as the driver, NVML or dmem.capacity state it; absent when unknown",
        total,
    );
    reg.register(
        "gpuledger_device_memory_used_bytes",
        "Bytes in use in each device memory region as the driver or NVML states them; absent when unknown",
        used,
    );
    super::device_metrics::register(&mut reg, ledger);
    let procs = process_families(ledger, opts);
    reg.register(
        "gpuledger_process_memory_bytes",
        "Resident GPU memory per process, device and region (sums over regions, devices and processes); zero values are not written",
        procs.resident,
    );
    reg.register(
        "gpuledger_process_memory_total_bytes",
        "Size of every GPU buffer each process holds per device and region, resident or not; zero values are not written",
        procs.total,
    );
    reg.register(
        "gpuledger_process_memory_shared_bytes",
        "The part of each process's GPU buffers shared with other processes; zero values are not written",
        procs.shared,
    );
    reg.register(
        "gpuledger_process_engine_busy_ratio",
        "Busy share of each engine class per process and device since the previous sample (fdinfo drm-cycles over drm-total-cycles, else drm-engine ns over wall time, divided by the class's capacity)",
        engine_busy(ledger, opts.series),
    );
    register_findings(&mut reg, ledger, findings, opts.series);
    reg.register(
        "gpuledger_sample_timestamp_seconds",
        "Time of the sample these metrics come from",
        SortedGauges::single(ledger.time_ms / 1000),
    );
    register_self(&mut reg, stats);
    let mut out = String::new();
    // Writing into a String only fails if an encoder impl fails, and ours never do; an empty
    // body would make the scrape fail loudly rather than serve half a page.
    if encode(&mut out, &reg).is_err() {
        out.clear();
    }
    out
}

/// Host memory: each counter its own family (MemTotal and MemAvailable do not add up).
fn register_host(reg: &mut Registry, ledger: &Ledger) {
    let h = &ledger.host;
    for (name, help, v) in [
        (
            "gpuledger_host_memory_total_bytes",
            "Host RAM (MemTotal)",
            h.mem_total,
        ),
        (
            "gpuledger_host_memory_available_bytes",
            "Host RAM available (MemAvailable)",
            h.mem_available,
        ),
        (
            "gpuledger_host_gpu_active_bytes",
            "Host pages the GPU driver holds in use (GPUActive)",
            h.gpu_active,
        ),
        (
            "gpuledger_host_gpu_reclaim_bytes",
            "Host pages the GPU driver keeps for reuse (GPUReclaim)",
            h.gpu_reclaim,
        ),
        (
            "gpuledger_host_unaccounted_bytes",
            "Host memory that no process and no kernel counter accounts for",
            h.unaccounted,
        ),
    ] {
        if let Some(v) = v {
            reg.register(name, help, SortedGauges::single(v));
        }
    }
    reg.register(
        "gpuledger_driver_held_bytes",
        "Driver-held host memory by part (kernel_counter, pinned_shmem); counter names the kernel counter it starts from; the parts add up to the total; a zero pinned_shmem part is not written",
        driver_held_gauges(ledger),
    );
}

fn driver_held_gauges(ledger: &Ledger) -> SortedGauges {
    let mut held = SortedGauges::default();
    if let Some(e) = ledger.host.driver_held() {
        for (part, v) in [
            ("kernel_counter", e.counter_bytes),
            ("pinned_shmem", e.pinned_shmem),
        ] {
            if part == "pinned_shmem" && v == 0 {
                continue;
            }
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

fn device_memory_gauges(ledger: &Ledger) -> (SortedGauges, SortedGauges) {
    let (mut total, mut used) = (SortedGauges::default(), SortedGauges::default());
    for d in &ledger.devices {
        for r in d.memory(&ledger.dmem_capacity) {
            let labels = l(&[("device", d.id.clone()), ("region", r.region.clone())]);
            if let Some(v) = r.total {
                total.set(labels.clone(), v);
            }
            if let Some(v) = r.used {
                used.set(labels, v);
            }
        }
    }
    (total, used)
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

fn register_findings(reg: &mut Registry, ledger: &Ledger, findings: &[Finding], series: Series) {
    let (count, bytes) = finding_gauges(ledger, findings, series);
    reg.register(
        "gpuledger_findings",
        "Number of current findings by kind and severity",
        count,
    );
    reg.register(
        "gpuledger_finding_bytes",
        "Bytes behind each current finding, with its process's job labels; findings of zero bytes are counted in gpuledger_findings only",
        bytes,
    );
    reg.register(
        "gpuledger_known_issue",
        "One series per entry of the known-issues base that applies to this machine, value 1; severity is warning (versions and devices match) or critical (and its finding is present)",
        known_issue_gauges(findings),
    );
}

/// `gpuledger_findings` and `gpuledger_finding_bytes`: the latter per finding, with its process's
/// job labels (and its pid unless `series` is per job).
fn finding_gauges(
    ledger: &Ledger,
    findings: &[Finding],
    series: Series,
) -> (SortedGauges, SortedGauges) {
    let (mut count, mut bytes) = (SortedGauges::default(), SortedGauges::default());
    for f in findings {
        let kind = l(&[
            ("kind", f.kind.as_str().into()),
            ("severity", f.severity.as_str().into()),
        ]);
        count.add(kind.clone(), 1);
        if f.bytes == 0 {
            continue;
        }
        let backing = f
            .backing
            .and_then(|b| serde_json::to_value(b).ok())
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let mut labels = kind;
        if series == Series::PerProcess {
            let pid = f.pid.map(|p| p.to_string()).unwrap_or_default();
            labels.push(("pid".into(), pid));
        }
        labels.extend(l(&[
            ("rank", f.rank.map(|r| r.to_string()).unwrap_or_default()),
            ("device", opt(&f.device)),
            ("peer", opt(&f.peer)),
            ("backing", backing),
        ]));
        let process = f
            .pid
            .and_then(|pid| ledger.processes.iter().find(|p| p.pid == pid));
        labels.extend(process.map(|p| job_labels(p, series)).unwrap_or_default());
        bytes.add(labels, f.bytes);
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

/// What the exporter is and how its scans go.
fn register_self(reg: &mut Registry, stats: &ExporterStats) {
    let mut build = SortedGauges::default();
    build.set(l(&[("version", env!("CARGO_PKG_VERSION").into())]), 1);
    reg.register(
        "gpuledger_build_info",
        "The gpuledger build serving these metrics, value 1",
        build,
    );
    reg.register(
        "gpuledger_scan_duration_seconds",
        "Seconds the last sample took: /proc and sysfs scan, attribution, findings and the snapshot JSON",
        FloatGauge(stats.scan_seconds),
    );
    let mut errors = SortedCounters::default();
    for (kind, v) in [
        ("sample_failed", stats.failed_samples),
        ("unusable_file", stats.unusable_files),
        ("unreadable_process", stats.unreadable_processes),
    ] {
        errors.set(l(&[("kind", kind.into())]), v);
    }
    reg.register(
        "gpuledger_scan_errors",
        "Scan problems since the exporter started: failed samples (the last good sample is still served), files met but not usable, processes whose fds could not be read",
        errors,
    );
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
            engines: Vec::new(),
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
                ..Default::default()
            },
            &ExporterStats::default(),
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
        let first = render_metrics(
            &ledger,
            &[],
            &MetricsOptions::default(),
            &ExporterStats::default(),
        );
        for _ in 0..5 {
            assert_eq!(
                render_metrics(
                    &ledger,
                    &[],
                    &MetricsOptions::default(),
                    &ExporterStats::default()
                ),
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

    #[test]
    fn families_sum_carry_no_zero_series_and_say_what_built_them() {
        let mut p = row(7, 1 << 30);
        p.usage[0].shared = Some(0);
        p.usage[0].total = Some(2 << 30);
        p.usage.push(Usage {
            region: "system".into(),
            resident: Some(0),
            ..p.usage[0].clone()
        });
        let mut ledger = Ledger {
            processes: vec![p],
            ..Default::default()
        };
        ledger.host.mem_total = Some(64 << 30);
        ledger.host.mem_available = Some(8 << 30);
        let stats = ExporterStats {
            scan_seconds: 0.25,
            failed_samples: 2,
            ..Default::default()
        };
        let text = render_metrics(&ledger, &[], &MetricsOptions::default(), &stats);
        let series: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(
            !series.iter().any(|l| l.contains("kind=\"resident\"")),
            "{text}"
        );
        assert!(
            !series
                .iter()
                .any(|l| l.starts_with("gpuledger_process") && l.ends_with(" 0")),
            "{text}"
        );
        for line in [
            "gpuledger_process_memory_bytes{pid=\"7\",comm=\"p7\",rank=\"\",device=\"0000:03:00.0\",region=\"vram0\",class=\"device\"} 1073741824",
            "gpuledger_process_memory_total_bytes{pid=\"7\",comm=\"p7\",rank=\"\",device=\"0000:03:00.0\",region=\"vram0\",class=\"device\"} 2147483648",
            "gpuledger_host_memory_total_bytes 68719476736",
            "gpuledger_host_memory_available_bytes 8589934592",
            "gpuledger_scan_duration_seconds 0.25",
            "gpuledger_scan_errors_total{kind=\"sample_failed\"} 2",
            "# TYPE gpuledger_scan_errors counter",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        let build = format!(
            "gpuledger_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.lines().any(|l| l == build), "{text}");
        assert!(
            !text.contains("shared_bytes{"),
            "a zero shared value is not written"
        );
    }
}
