//! `--json`: the `gpuledger.snapshot/1` document of DESIGN.md. Bytes are integers; absent numbers
//! are `null`, never 0.

use crate::findings::Finding;
use crate::ledger::{Ledger, Usage};
use crate::snapshot::ScanStats;
use serde::Serialize;
use std::time::{Duration, UNIX_EPOCH};

/// The schema name written in every document.
pub const SCHEMA: &str = "gpuledger.snapshot/1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    time: String,
    root: &'a str,
    host: Host,
    devices: Vec<Device<'a>>,
    processes: Vec<Process<'a>>,
    clients: Vec<Client<'a>>,
    findings: &'a [Finding],
    scan: &'a ScanStats,
}

#[derive(Serialize)]
struct Host {
    mem_total: Option<u64>,
    mem_available: Option<u64>,
    gpu_active: Option<u64>,
    gpu_reclaim: Option<u64>,
    gpu_active_source: Option<String>,
    unaccounted: Option<u64>,
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
    let doc = Doc {
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
        scan: &ledger.stats,
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("plain data serialises");
    s.push('\n');
    s
}
