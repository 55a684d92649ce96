//! Attribution: Snapshot → Ledger. Bytes per process × device × region, each DRM client counted
//! once, host totals and the evidence of driver-held host memory.
//!
//! A client is keyed by (device, `drm-client-id`): dup'd fds, fds inherited across fork and fds
//! passed over a socket share one `struct drm_file` and print the same id, so the same bytes appear
//! under several fds and pids. Each client is counted once, for its lowest holder pid (the parent
//! of a fork), and every holder is listed on the client.

mod accelerators;
pub mod engines;
mod host;
mod integrated;
mod traced;
mod view;

pub use engines::{EngineBasis, EngineClock, EngineUse};
pub use host::{CounterFault, DriverHeld, GpuCounter, HeldCounter, HostTotals};
pub use view::{Filter, FilterError, SortKey, Subject};

use crate::snapshot::{ScanStats, Snapshot};
use crate::sources::drm_devices::DeviceInfo;
use crate::sources::drm_fdinfo::RegionStats;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Where a memory region lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemClass {
    /// On the device: VRAM, local memory.
    Device,
    /// Host RAM used by the GPU: GTT, system, cpu, and `memory` of integrated GPUs.
    Host,
    /// Stolen / carve-out memory.
    Stolen,
}

impl MemClass {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemClass::Device => "device",
            MemClass::Host => "host",
            MemClass::Stolen => "stolen",
        }
    }
}

/// Classifies a region name (xe `vram0`/`gtt`/`system`/`stolen`, i915 `local0`/`system0`/
/// `stolen-*`, amdgpu `vram`/`gtt`/`cpu` and on-chip `gds`/`gws`/`oa`/`doorbell`/`mmioremap`,
/// generic `memory`). Unknown names containing `vram`/`local` are device, `stolen` is stolen,
/// anything else host.
pub fn classify(region: &str) -> MemClass {
    if region.starts_with("stolen") {
        return MemClass::Stolen;
    }
    let on_chip = ["gds", "gws", "oa", "doorbell", "mmioremap"];
    if region.starts_with("vram") || region.starts_with("local") || on_chip.contains(&region) {
        return MemClass::Device;
    }
    if region.contains("vram") || region.contains("local") {
        return MemClass::Device;
    }
    MemClass::Host
}

/// The kernel or library interface a usage row was read from.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// DRM fdinfo (drm-usage-stats).
    #[default]
    DrmFdinfo,
    /// ROCm KFD's per-process sysfs VRAM.
    Kfd,
    /// NVML's per-process used GPU memory.
    Nvml,
    /// `/proc/PID/smaps` (CUDA pinned host memory as shared `/dev/zero` mappings).
    Smaps,
    /// The job's traced API calls (host memory registered in place, which no counter shows).
    ApiTrace,
}

impl UsageSource {
    /// How reports name it.
    pub fn as_str(self) -> &'static str {
        match self {
            UsageSource::DrmFdinfo => "DRM fdinfo",
            UsageSource::Kfd => "KFD",
            UsageSource::Nvml => "NVML",
            UsageSource::Smaps => "smaps",
            UsageSource::ApiTrace => "API trace",
        }
    }
}

/// Bytes of one region on one device for one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Device id.
    pub device: String,
    /// Raw region name.
    pub region: String,
    /// Its class.
    pub class: MemClass,
    /// Where the numbers were read.
    #[serde(default)]
    pub source: UsageSource,
    /// drm-total.
    pub total: Option<u64>,
    /// drm-resident (or legacy drm-memory).
    pub resident: Option<u64>,
    /// drm-shared.
    pub shared: Option<u64>,
    /// drm-purgeable.
    pub purgeable: Option<u64>,
    /// drm-active.
    pub active: Option<u64>,
}

/// One DRM client (open file description), counted once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    /// Device id.
    pub device: String,
    /// drm-client-id.
    pub client_id: Option<u64>,
    /// drm-driver.
    pub driver: Option<String>,
    /// The pid it is attributed to.
    pub owner: u32,
    /// Every (pid, fd) that refers to it.
    pub holders: Vec<(u32, u32)>,
    /// Its regions.
    pub regions: BTreeMap<String, RegionStats>,
    /// amdgpu `amd-evicted-vram`, bytes.
    pub evicted_vram: Option<u64>,
    /// The fd link text of the first holder (`/dev/dri/renderD129`).
    pub path: String,
    /// Its engine counters by class, for utilisation between samples ([`EngineClock`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub engines: BTreeMap<String, crate::sources::drm_fdinfo::EngineStats>,
}

/// One process's row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRow {
    /// Pid.
    pub pid: u32,
    /// NSpid when the process is in a nested pid namespace.
    pub nspid: Vec<u32>,
    /// comm.
    pub comm: String,
    /// cmdline.
    pub cmdline: Vec<String>,
    /// Global rank from the launcher's environment.
    pub rank: Option<u32>,
    /// Local rank.
    pub local_rank: Option<u32>,
    /// Device with the most device-local resident bytes.
    pub home_device: Option<String>,
    /// Per device × region, summed over the clients it owns.
    pub usage: Vec<Usage>,
    /// Allow-listed environment.
    pub env: BTreeMap<String, String>,
    /// Clients it holds that are counted for another pid: (client id, owner pid).
    pub shared_with_others: Vec<(u64, u32)>,
    /// Whether it holds NVIDIA device fds.
    pub has_nvidia_fds: bool,
    /// Whether it holds /dev/kfd.
    pub has_kfd_fd: bool,
    /// cgroup path.
    #[serde(default)]
    pub cgroup: Option<String>,
    /// Pod, container and Slurm job labels.
    #[serde(default)]
    pub labels: crate::sources::cgroup::JobLabels,
    /// Engine utilisation since the previous sample of a view that samples in a loop (empty on
    /// a single sample).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineUse>,
}

impl ProcessRow {
    /// Resident bytes of `class` on `device`.
    pub fn resident(&self, device: &str, class: MemClass) -> u64 {
        self.usage
            .iter()
            .filter(|u| u.device == device && u.class == class)
            .filter_map(|u| u.resident)
            .sum()
    }

    /// Devices this process has usage on.
    pub fn devices(&self) -> BTreeSet<&str> {
        self.usage.iter().map(|u| u.device.as_str()).collect()
    }

    /// A short label: `rank 0 (pid 116400)` or `pid 116400 (python3)`.
    pub fn label(&self) -> String {
        match self.rank {
            Some(r) => format!("rank {r} (pid {})", self.pid),
            None => format!("pid {} ({})", self.pid, self.comm),
        }
    }
}

/// The attributed view of one snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Sample time, ms since the epoch.
    pub time_ms: u64,
    /// Root label.
    pub root: String,
    /// Host totals.
    pub host: HostTotals,
    /// Devices.
    pub devices: Vec<DeviceInfo>,
    /// Processes with GPU memory or GPU fds.
    pub processes: Vec<ProcessRow>,
    /// Deduplicated clients.
    pub clients: Vec<Client>,
    /// Scan counts.
    pub stats: ScanStats,
    /// The GPU processes' cgroups (memory and dmem).
    #[serde(default)]
    pub cgroups: Vec<crate::sources::cgroup::CgroupInfo>,
    /// `dmem.capacity` of the root cgroup.
    #[serde(default)]
    pub dmem_capacity: BTreeMap<String, u64>,
}

impl Ledger {
    /// Attributes a snapshot, taking it by value: its strings (names, command lines,
    /// environments, regions) move into the ledger instead of being copied.
    pub fn from_snapshot(s: Snapshot) -> Ledger {
        let host = host::host_totals(&s);
        let Snapshot {
            time_ms,
            root,
            mut devices,
            mut processes,
            nvml,
            cgroups,
            pod_names,
            dmem_capacity,
            stats,
            ..
        } = s;
        let clients = dedup_clients(&devices, &mut processes);
        let mut owned: BTreeMap<u32, Vec<&Client>> = BTreeMap::new();
        let mut shared: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
        for c in &clients {
            owned.entry(c.owner).or_default().push(c);
            let Some(id) = c.client_id else { continue };
            let mut previous = None;
            for &(pid, _) in &c.holders {
                if pid != c.owner && previous != Some(pid) {
                    shared.entry(pid).or_default().push((id, c.owner));
                }
                previous = Some(pid);
            }
        }
        let mut rows: Vec<ProcessRow> = processes
            .into_iter()
            .map(|p| {
                let mut usage = sum_usage(owned.get(&p.pid).map_or(&[][..], Vec::as_slice));
                usage.extend(accelerators::nvidia_usage(&nvml, &p));
                usage.extend(accelerators::kfd_usage(&p, &usage));
                let shared_with_others = shared.remove(&p.pid).unwrap_or_default();
                process_row(p, usage, shared_with_others, &pod_names)
            })
            .collect();
        // Opening /dev/kfd alone (ROCm runtime start-up) is no GPU use.
        rows.retain(|p| {
            !(p.has_kfd_fd
                && p.usage.is_empty()
                && !p.has_nvidia_fds
                && p.shared_with_others.is_empty())
        });
        rows.sort_by_key(|p| (p.rank.is_none(), p.rank, p.pid));
        integrated::mark(&mut devices, &clients);
        Ledger {
            time_ms,
            root,
            host,
            devices,
            processes: rows,
            clients,
            stats,
            cgroups,
            dmem_capacity,
        }
    }

    /// Whether `device` is an integrated GPU (see [`IntegratedBy`]).
    pub fn is_integrated(&self, device: &str) -> bool {
        self.devices
            .iter()
            .any(|d| d.id == device && d.integrated.is_some())
    }

    /// Host-class resident bytes on integrated GPUs (their working memory), over all clients.
    pub fn integrated_host_class_resident(&self) -> u64 {
        self.clients
            .iter()
            .filter(|c| self.is_integrated(&c.device))
            .flat_map(|c| c.regions.iter())
            .filter(|(name, _)| classify(name) == MemClass::Host)
            .filter_map(|(_, r)| r.resident_bytes())
            .sum()
    }

    /// Total host-class resident bytes over all clients.
    pub fn host_class_resident(&self) -> u64 {
        self.clients
            .iter()
            .flat_map(|c| c.regions.iter())
            .filter(|(name, _)| classify(name) == MemClass::Host)
            .filter_map(|(_, r)| r.resident_bytes())
            .sum()
    }

    /// Resident bytes of `class` over every process's usage.
    pub fn resident_total(&self, class: MemClass) -> u64 {
        self.processes
            .iter()
            .flat_map(|p| p.usage.iter())
            .filter(|u| u.class == class)
            .filter_map(|u| u.resident)
            .sum()
    }

    /// Host-class resident bytes of the processes in cgroup `path`.
    pub fn cgroup_host_class(&self, path: &str) -> u64 {
        self.processes
            .iter()
            .filter(|p| p.cgroup.as_deref() == Some(path))
            .flat_map(|p| p.usage.iter())
            .filter(|u| u.class == MemClass::Host)
            .filter_map(|u| u.resident)
            .sum()
    }

    /// A device by id.
    pub fn device(&self, id: &str) -> Option<&DeviceInfo> {
        self.devices.iter().find(|d| d.id == id)
    }
}

fn env_number(env: &BTreeMap<String, String>, names: &[&str]) -> Option<u32> {
    names.iter().find_map(|n| env.get(*n)?.trim().parse().ok())
}

/// The device a DRM fd refers to: fdinfo's `drm-pdev`, else the device owning its minor, else
/// the minor or the link text itself.
fn device_of(devices: &[DeviceInfo], fd: &crate::snapshot::DrmFd) -> String {
    if let Some(pdev) = &fd.info.pdev {
        return pdev.clone();
    }
    if let Some(minor) = &fd.minor {
        if let Some(d) = devices.iter().find(|d| d.minors.contains(minor)) {
            return d.id.clone();
        }
        return minor.clone();
    }
    fd.path.clone()
}

/// The DRM clients of every process, each once; the processes' DRM fds are moved out (their
/// regions and names become the clients').
fn dedup_clients(
    devices: &[DeviceInfo],
    processes: &mut [crate::snapshot::ProcessSample],
) -> Vec<Client> {
    // Key: (device, client id) or, without an id, (device, pid, fd) which is never shared.
    let mut by_key: BTreeMap<(String, Option<u64>, u32, u32), Client> = BTreeMap::new();
    let claim = claims(devices, processes);
    for p in processes.iter_mut() {
        for fd in std::mem::take(&mut p.drm)
            .into_iter()
            .filter(|f| f.info.is_drm())
        {
            let device = device_of(devices, &fd);
            let key = match fd.info.client_id {
                Some(id) => (device.clone(), Some(id), 0, 0),
                None => (device.clone(), None, p.pid, fd.fd),
            };
            let c = by_key.entry(key).or_insert_with(|| Client {
                device,
                client_id: fd.info.client_id,
                evicted_vram: fd.info.extra_bytes("amd-evicted-vram"),
                driver: fd.info.driver,
                owner: p.pid,
                holders: Vec::new(),
                regions: fd.info.regions,
                engines: fd.info.engines,
                path: fd.path,
            });
            if claim(p.pid) < claim(c.owner) {
                c.owner = p.pid;
            }
            c.holders.push((p.pid, fd.fd));
        }
    }
    let mut out: Vec<Client> = by_key.into_values().collect();
    for c in &mut out {
        c.holders.sort_unstable();
    }
    out
}

/// Which holder of a shared client it is credited to: the lowest key wins. A holder with a rank
/// variable before one without (a launcher that keeps rank 0's fd must not take rank 0's bytes),
/// then one with engine time on a client of its own (the process doing GPU work), then the lowest
/// pid (a DataLoader worker that inherited its parent's fd leaves it to the parent).
fn claims(
    devices: &[DeviceInfo],
    processes: &[crate::snapshot::ProcessSample],
) -> impl Fn(u32) -> (bool, bool, u32) {
    let mut holders: BTreeMap<(String, u64), u32> = BTreeMap::new();
    fn ids<'a>(
        devices: &'a [DeviceInfo],
        p: &'a crate::snapshot::ProcessSample,
    ) -> impl Iterator<Item = (&'a crate::snapshot::DrmFd, Option<(String, u64)>)> {
        p.drm
            .iter()
            .map(|f| (f, f.info.client_id.map(|id| (device_of(devices, f), id))))
    }
    for p in processes {
        for (_, key) in ids(devices, p) {
            *holders.entry(key.unwrap_or_default()).or_default() += 1;
        }
    }
    let keys: BTreeMap<u32, (bool, bool)> = processes
        .iter()
        .map(|p| {
            let ranked = env_number(&p.env, RANK_VARS).is_some();
            let busy_own = ids(devices, p).any(|(f, key)| {
                key.is_none_or(|k| holders.get(&k) == Some(&1))
                    && f.info.engines.values().any(|e| e.busy_ns.unwrap_or(0) > 0)
            });
            (p.pid, (!ranked, !busy_own))
        })
        .collect();
    move |pid| {
        let (unranked, idle) = keys.get(&pid).copied().unwrap_or((true, true));
        (unranked, idle, pid)
    }
}

/// The environment variables that carry a process's global rank, by launcher.
const RANK_VARS: &[&str] = &[
    "RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
];

/// One process's row, its names and environment moved from the sample.
fn process_row(
    p: crate::snapshot::ProcessSample,
    usage: Vec<Usage>,
    shared_with_others: Vec<(u64, u32)>,
    pods: &BTreeMap<String, crate::sources::k8s_pods::PodName>,
) -> ProcessRow {
    let has = |kind| p.other_gpu_fds.iter().any(|g| g.kind == kind);
    let has_nvidia_fds = has(crate::sources::proc_pid::GpuFdKind::Nvidia);
    let has_kfd_fd = has(crate::sources::proc_pid::GpuFdKind::Kfd);
    let labels = job_labels(&p, pods);
    let rank = env_number(&p.env, RANK_VARS);
    let local_rank = env_number(
        &p.env,
        &[
            "LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "MPI_LOCALRANKID",
            "SLURM_LOCALID",
        ],
    );
    ProcessRow {
        pid: p.pid,
        nspid: if p.nspid.len() > 1 {
            p.nspid
        } else {
            Vec::new()
        },
        comm: p.comm,
        cmdline: p.cmdline,
        rank,
        local_rank,
        home_device: home_device(&usage),
        usage,
        env: p.env,
        shared_with_others,
        has_nvidia_fds,
        has_kfd_fd,
        cgroup: p.cgroup,
        labels,
        engines: Vec::new(),
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    }
}

fn sum_usage(clients: &[&Client]) -> Vec<Usage> {
    let mut by: BTreeMap<(String, String), Usage> = BTreeMap::new();
    for c in clients {
        for (region, r) in &c.regions {
            let u = by
                .entry((c.device.clone(), region.clone()))
                .or_insert_with(|| Usage {
                    device: c.device.clone(),
                    region: region.clone(),
                    class: classify(region),
                    source: UsageSource::DrmFdinfo,
                    total: None,
                    resident: None,
                    shared: None,
                    purgeable: None,
                    active: None,
                });
            u.total = add(u.total, r.total);
            u.resident = add(u.resident, r.resident_bytes());
            u.shared = add(u.shared, r.shared);
            u.purgeable = add(u.purgeable, r.purgeable);
            u.active = add(u.active, r.active);
        }
    }
    by.into_values().collect()
}

fn home_device(usage: &[Usage]) -> Option<String> {
    let mut local: BTreeMap<&str, u64> = BTreeMap::new();
    for u in usage.iter().filter(|u| u.class == MemClass::Device) {
        *local.entry(&u.device).or_default() += u.resident.unwrap_or(0);
    }
    if let Some((dev, _)) = local
        .iter()
        .filter(|(_, &b)| b > 0)
        .max_by_key(|(d, &b)| (b, std::cmp::Reverse(*d)))
    {
        return Some(dev.to_string());
    }
    let devices: BTreeSet<&str> = usage.iter().map(|u| u.device.as_str()).collect();
    (devices.len() == 1).then(|| devices.into_iter().next().unwrap_or_default().to_string())
}

/// A process's job labels from its cgroup path and environment, with its pod's namespace and
/// name where the kubelet's log directory names them.
fn job_labels(
    p: &crate::snapshot::ProcessSample,
    pods: &BTreeMap<String, crate::sources::k8s_pods::PodName>,
) -> crate::sources::cgroup::JobLabels {
    let mut l = crate::sources::cgroup::labels(
        p.cgroup.as_deref().unwrap_or(""),
        p.env.get("SLURM_JOB_ID").map(String::as_str),
    );
    if let Some(pod) = l.pod.as_ref().and_then(|uid| pods.get(uid)) {
        l.namespace = Some(pod.namespace.clone());
        l.pod_name = Some(pod.name.clone());
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        for (r, c) in [
            ("vram0", MemClass::Device),
            ("local0", MemClass::Device),
            ("gds", MemClass::Device),
            ("gtt", MemClass::Host),
            ("system", MemClass::Host),
            ("system0", MemClass::Host),
            ("cpu", MemClass::Host),
            ("memory", MemClass::Host),
            ("stolen", MemClass::Stolen),
            ("stolen-local0", MemClass::Stolen),
            ("amd-visible-vram", MemClass::Device),
        ] {
            assert_eq!(classify(r), c, "{r}");
        }
    }
}
