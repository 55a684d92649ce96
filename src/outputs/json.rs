//! `--json`: the `gpuledger.snapshot/1` document of docs/DESIGN.md. Bytes are integers; absent numbers
//! are `null`, never 0.

use crate::findings::Finding;
use crate::ledger::{CounterFault, DriverHeld, Ledger, Usage};
use crate::snapshot::ScanStats;
use crate::sources::drm_devices::IntegratedBy;
use serde::Serialize;
use std::time::{Duration, UNIX_EPOCH};

/// The schema name written in every document.
pub const SCHEMA: &str = "gpuledger.snapshot/1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    time: String,
    root: &'a str,
    host: Host<'a>,
    devices: Vec<Device<'a>>,
    processes: Vec<Process<'a>>,
    clients: Vec<Client<'a>>,
    findings: &'a [Finding],
    cgroups: Vec<Cgroup<'a>>,
    dmem_capacity: &'a std::collections::BTreeMap<String, u64>,
    scan: &'a ScanStats,
}

#[derive(Serialize)]
struct Host<'a> {
    mem_total: Option<u64>,
    mem_available: Option<u64>,
    gpu_active: Option<u64>,
    gpu_reclaim: Option<u64>,
    gpu_active_source: Option<String>,
    unaccounted: Option<u64>,
    pinned_shmem: Option<u64>,
    driver_held: Option<DriverHeld>,
    /// GPU page counters above MemTotal (kernel faults, not used).
    counter_faults: &'a [CounterFault],
}

#[derive(Serialize)]
struct Device<'a> {
    id: &'a str,
    minors: &'a [String],
    driver: Option<&'a str>,
    vendor: Option<&'a str>,
    device: Option<&'a str>,
    name: Option<&'a str>,
    runtime_status: Option<&'a str>,
    vram_total: Option<u64>,
    vram_used: Option<u64>,
    gtt_total: Option<u64>,
    gtt_used: Option<u64>,
    /// Every memory region with its size and use as the kernel, NVML or dmem state them.
    memory: Vec<crate::sources::drm_devices::RegionMemory>,
    /// Device-local capacity (the table's VRAM TOTAL), `null` when unknown.
    local_total: Option<u64>,
    integrated: Option<IntegratedBy>,
    /// Temperature, power, fan, clocks, PCIe link, utilisation, modes; absent where none given.
    #[serde(skip_serializing_if = "crate::sources::telemetry::Telemetry::is_empty")]
    telemetry: &'a crate::sources::telemetry::Telemetry,
}

#[derive(Serialize)]
struct Process<'a> {
    pid: u32,
    nspid: &'a [u32],
    comm: &'a str,
    cmdline: String,
    rank: Option<u32>,
    local_rank: Option<u32>,
    home_device: Option<&'a str>,
    usage: &'a [Usage],
    env: &'a std::collections::BTreeMap<String, String>,
    cgroup: Option<&'a str>,
    pod: Option<&'a str>,
    container: Option<&'a str>,
    job: Option<&'a str>,
}

#[derive(Serialize)]
struct Cgroup<'a> {
    path: &'a str,
    memory_current: Option<u64>,
    memory_max: Option<u64>,
    gpu_host_class: u64,
    dmem_current: &'a std::collections::BTreeMap<String, u64>,
    dmem_max: &'a std::collections::BTreeMap<String, u64>,
}

#[derive(Serialize)]
struct Client<'a> {
    device: &'a str,
    client_id: Option<u64>,
    driver: Option<&'a str>,
    pid: u32,
    holders: Vec<Holder>,
}

#[derive(Serialize)]
struct Holder {
    pid: u32,
    fd: u32,
}

/// RFC 3339 time of a sample.
pub fn rfc3339(time_ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(time_ms)).to_string()
}

/// Renders the snapshot document (pretty-printed, one trailing newline).
pub fn render(ledger: &Ledger, findings: &[Finding]) -> String {
    let mut s =
        serde_json::to_string_pretty(&doc(ledger, findings)).expect("plain data serialises");
    s.push('\n');
    s
}

/// Renders the snapshot document on one line (JSON Lines, for `--loop`), newline-terminated.
pub fn render_line(ledger: &Ledger, findings: &[Finding]) -> String {
    let mut s = serde_json::to_string(&doc(ledger, findings)).expect("plain data serialises");
    s.push('\n');
    s
}

fn doc<'a>(ledger: &'a Ledger, findings: &'a [Finding]) -> Doc<'a> {
    Doc {
        schema: SCHEMA,
        time: rfc3339(ledger.time_ms),
        root: &ledger.root,
        host: Host {
            mem_total: ledger.host.mem_total,
            mem_available: ledger.host.mem_available,
            gpu_active: ledger.host.gpu_active,
            gpu_reclaim: ledger.host.gpu_reclaim,
            gpu_active_source: ledger.host.gpu_active_source.clone(),
            unaccounted: ledger.host.unaccounted,
            pinned_shmem: ledger.host.pinned_shmem,
            driver_held: ledger.host.driver_held(),
            counter_faults: &ledger.host.counter_faults,
        },
        devices: ledger
            .devices
            .iter()
            .map(|d| Device {
                id: &d.id,
                minors: &d.minors,
                driver: d.driver.as_deref(),
                vendor: d.vendor.as_deref(),
                device: d.device.as_deref(),
                name: d.name.as_deref(),
                runtime_status: d.runtime_status.as_deref(),
                vram_total: d.vram_total,
                vram_used: d.vram_used,
                gtt_total: d.gtt_total,
                gtt_used: d.gtt_used,
                memory: d.memory(&ledger.dmem_capacity),
                local_total: d.local_capacity(&ledger.dmem_capacity),
                integrated: d.integrated,
                telemetry: &d.telemetry,
            })
            .collect(),
        processes: ledger
            .processes
            .iter()
            .map(|p| Process {
                pid: p.pid,
                nspid: &p.nspid,
                comm: &p.comm,
                cmdline: p.cmdline.join(" "),
                rank: p.rank,
                local_rank: p.local_rank,
                home_device: p.home_device.as_deref(),
                usage: &p.usage,
                env: &p.env,
                cgroup: p.cgroup.as_deref(),
                pod: p.labels.pod.as_deref(),
                container: p.labels.container.as_deref(),
                job: p.labels.job.as_deref(),
            })
            .collect(),
        clients: ledger
            .clients
            .iter()
            .map(|c| Client {
                device: &c.device,
                client_id: c.client_id,
                driver: c.driver.as_deref(),
                pid: c.owner,
                holders: c
                    .holders
                    .iter()
                    .map(|&(pid, fd)| Holder { pid, fd })
                    .collect(),
            })
            .collect(),
        findings,
        cgroups: ledger
            .cgroups
            .iter()
            .map(|c| Cgroup {
                path: &c.path,
                memory_current: c.memory_current,
                memory_max: c.memory_max,
                gpu_host_class: ledger.cgroup_host_class(&c.path),
                dmem_current: &c.dmem_current,
                dmem_max: &c.dmem_max,
            })
            .collect(),
        dmem_capacity: &ledger.dmem_capacity,
        scan: &ledger.stats,
    }
}
