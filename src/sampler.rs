//! Builds [`Snapshot`]s from a [`Root`], cheaply enough to repeat at 10 Hz.
//!
//! A full scan reads every fd link of every process, which on a busy node costs as much as `fuser`.
//! Repeated sampling keeps per-process state instead: processes holding GPU fds are re-read every
//! sample (fd table and DRM fdinfo); new pids come from the `/proc` listing and get a full fd scan;
//! every other process has its fd count (`st_size` of `/proc/PID/fd`, Linux ≥ 6.2) checked once per
//! `check_period` (1 s, so a new DRM client is seen within about a second) and its table re-read only when the count changed, plus a slow full rotation every
//! `rescan_period` for the rare open-and-close that keeps the count. fdinfo of a device that runtime
//! PM reports suspended is re-read only every `asleep_period`, because reading xe fdinfo wakes it.

use crate::root::Root;
use crate::snapshot::{DrmFd, ProcessSample, ScanStats, Snapshot};
use crate::sources::cgroup;
use crate::sources::drm_devices::{scan_devices, DeviceInfo};
use crate::sources::drm_fdinfo::FdInfo;
use crate::sources::kfd;
use crate::sources::meminfo::{
    is_gpu_vmstat_key, parse_meminfo, parse_vmstat, read_meminfo, read_vmstat,
};
use crate::sources::nvml::{self, NvmlSource};
use crate::sources::proc_pid::{self as pp, GpuFd, GpuFdKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use thiserror::Error;

/// Which processes a sampler looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every process.
    All,
    /// Exactly these pids.
    Pids(BTreeSet<u32>),
    /// These pids and all their descendants (found through `PPid`).
    Tree(BTreeSet<u32>),
}

/// Cadences of the incremental scan.
#[derive(Debug, Clone, Copy)]
pub struct SamplerOptions {
    /// How often a non-GPU process's fd count is checked.
    pub check_period: Duration,
    /// How often every fd table is re-read regardless.
    pub rescan_period: Duration,
    /// How often fdinfo on a runtime-suspended device is re-read.
    pub asleep_period: Duration,
    /// How often sysfs devices are re-listed.
    pub device_period: Duration,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions {
            check_period: Duration::from_secs(1),
            rescan_period: Duration::from_secs(30),
            asleep_period: Duration::from_secs(30),
            device_period: Duration::from_secs(10),
        }
    }
}

/// A sample could not be taken at all.
#[derive(Debug, Error)]
pub enum SampleError {
    /// The root has no readable `proc/`.
    #[error("cannot list {root}/proc: {source}; is this a capture tree (see `gpuledger capture`) or the live machine?")]
    NoProc {
        /// The root's label.
        root: String,
        /// The cause.
        source: io::Error,
    },
}

#[derive(Debug)]
struct Tracked {
    ppid: Option<u32>,
    fd_count: Option<u64>,
    last_check: Option<Instant>,
    last_scan: Option<Instant>,
    gpu: Vec<GpuFd>,
    meta: Option<ProcessSample>,
    fdinfo_cache: HashMap<u32, (Instant, FdInfo)>,
}

/// Samples one root repeatedly, keeping per-process state between samples.
#[derive(Debug)]
pub struct Sampler {
    root: Root,
    scope: Scope,
    opts: SamplerOptions,
    procs: HashMap<u32, Tracked>,
    devices: Vec<DeviceInfo>,
    devices_at: Option<Instant>,
    page_size: u64,
    /// Whether `st_size` of `/proc/PID/fd` is the fd count on this kernel (Linux ≥ 6.2).
    fd_count_in_size: bool,
    /// NVML, on live roots where libnvidia-ml loads.
    nvml: Option<Box<dyn NvmlSource>>,
    /// KFD `gpu_id` → PCI slot, refreshed with the devices.
    kfd_topology: BTreeMap<String, String>,
    /// Root cgroup `dmem.capacity`, refreshed with the devices.
    dmem_capacity: BTreeMap<String, u64>,
}

impl Sampler {
    /// A sampler over `root` limited to `scope`.
    pub fn new(root: Root, scope: Scope, opts: SamplerOptions) -> Sampler {
        let page_size = if root.is_live() {
            rustix::param::page_size() as u64
        } else {
            capture_page_size(&root).unwrap_or(4096)
        };
        let fd_count_in_size =
            root.is_live() && pp::fd_count(&root, std::process::id()).is_ok_and(|n| n > 0);
        Sampler {
            root,
            scope,
            opts,
            procs: HashMap::new(),
            devices: Vec::new(),
            devices_at: None,
            page_size,
            fd_count_in_size,
            nvml: None,
            kfd_topology: BTreeMap::new(),
            dmem_capacity: BTreeMap::new(),
        }
        .with_live_nvml()
    }

    fn with_live_nvml(mut self) -> Sampler {
        self.nvml = if self.root.is_live() {
            nvml::load().map(|l| Box::new(l) as Box<dyn NvmlSource>)
        } else {
            nvml::load_recorded(&self.root).map(|r| Box::new(r) as Box<dyn NvmlSource>)
        };
        self
    }

    /// Uses `source` for NVIDIA GPUs (recorded NVML answers in tests).
    pub fn with_nvml(mut self, source: Box<dyn NvmlSource>) -> Sampler {
        self.nvml = Some(source);
        self
    }

    /// Samples `scope` from now on (guard follows the members of the job's cgroup).
    pub fn set_scope(&mut self, scope: Scope) {
        self.scope = scope;
    }

    /// The root this sampler reads.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Takes one sample.
    pub fn sample(&mut self) -> Result<Snapshot, SampleError> {
        let now = Instant::now();
        let mut stats = ScanStats::default();
        let pids = pp::list_pids(&self.root).map_err(|source| SampleError::NoProc {
            root: self.root.label().to_string(),
            source,
        })?;
        stats.processes = pids.len() as u32;
        self.refresh_devices(now);
        let (meminfo, vmstat) = self.host_counters(&mut stats);

        let listed: BTreeSet<u32> = pids.iter().copied().collect();
        self.procs.retain(|pid, _| listed.contains(pid));
        let need_ppid = matches!(self.scope, Scope::Tree(_));
        for &pid in &pids {
            let root = &self.root;
            self.procs.entry(pid).or_insert_with(|| Tracked {
                ppid: if need_ppid {
                    pp::read_ppid(root, pid).ok().flatten()
                } else {
                    None
                },
                fd_count: None,
                last_check: None,
                last_scan: None,
                gpu: Vec::new(),
                meta: None,
                fdinfo_cache: HashMap::new(),
            });
        }
        let nv = self
            .nvml
            .as_ref()
            .and_then(|n| n.gpus().ok())
            .unwrap_or_default();
        for g in &nv {
            if !self.devices.iter().any(|d| d.id == g.bus_id) {
                self.devices.push(nvml::device_info(g));
            }
        }
        let in_scope = self.in_scope(&pids);
        let kfd_topology = std::mem::take(&mut self.kfd_topology);
        let asleep: BTreeSet<String> = self
            .devices
            .iter()
            .filter(|d| d.is_suspended())
            .flat_map(|d| d.minors.iter().cloned())
            .collect();
        stats.asleep_devices = self
            .devices
            .iter()
            .filter(|d| d.is_suspended())
            .map(|d| d.id.clone())
            .collect();

        let mut processes = Vec::new();
        for pid in in_scope {
            match self.sample_process(pid, now, &asleep, &kfd_topology, &mut stats) {
                Ok(Some(p)) => processes.push(p),
                Ok(None) => {}
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => stats.unreadable += 1,
                Err(_) => {
                    stats.vanished += 1;
                    self.procs.remove(&pid);
                }
            }
        }
        self.kfd_topology = kfd_topology;
        Ok(Snapshot {
            time_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            root: self.root.label().to_string(),
            page_size: self.page_size,
            meminfo,
            vmstat,
            devices: self.devices.clone(),
            cgroups: {
                let paths: BTreeSet<&String> =
                    processes.iter().filter_map(|p| p.cgroup.as_ref()).collect();
                paths
                    .into_iter()
                    .map(|p| cgroup::read_cgroup(&self.root, p))
                    .collect()
            },
            dmem_capacity: self.dmem_capacity.clone(),
            processes,
            nvml: nv,
            stats,
        })
    }

    fn refresh_devices(&mut self, now: Instant) {
        let stale = self
            .devices_at
            .is_none_or(|t| now.duration_since(t) >= self.opts.device_period);
        if stale {
            self.devices = scan_devices(&self.root);
            self.kfd_topology = kfd::topology(&self.root);
            self.dmem_capacity = cgroup::read_dmem_capacity(&self.root);
            self.devices_at = Some(now);
        }
    }

    fn host_counters(
        &self,
        stats: &mut ScanStats,
    ) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        let meminfo = read_meminfo(&self.root)
            .map(|t| parse_meminfo(&t))
            .unwrap_or_default();
        let vmstat = read_vmstat(&self.root)
            .map(|t| parse_vmstat(&t, is_gpu_vmstat_key))
            .unwrap_or_default();
        stats.malformed_lines += meminfo.malformed + vmstat.malformed;
        (meminfo.values, vmstat.values)
    }

    fn in_scope(&self, pids: &[u32]) -> Vec<u32> {
        match &self.scope {
            Scope::All => pids.to_vec(),
            Scope::Pids(set) => pids.iter().copied().filter(|p| set.contains(p)).collect(),
            Scope::Tree(roots) => {
                let mut memo: HashMap<u32, bool> = HashMap::new();
                pids.iter()
                    .copied()
                    .filter(|&p| self.descends_from(p, roots, &mut memo))
                    .collect()
            }
        }
    }

    fn descends_from(
        &self,
        pid: u32,
        roots: &BTreeSet<u32>,
        memo: &mut HashMap<u32, bool>,
    ) -> bool {
        let mut chain = Vec::new();
        let mut cur = Some(pid);
        let verdict = loop {
            let Some(p) = cur else { break false };
            if roots.contains(&p) {
                break true;
            }
            if let Some(&known) = memo.get(&p) {
                break known;
            }
            if chain.len() > 4096 || chain.contains(&p) {
                break false;
            }
            chain.push(p);
            cur = self
                .procs
                .get(&p)
                .and_then(|t| t.ppid)
                .filter(|&pp| pp != 0);
        };
        for p in chain {
            memo.insert(p, verdict);
        }
        verdict
    }

    fn sample_process(
        &mut self,
        pid: u32,
        now: Instant,
        asleep: &BTreeSet<String>,
        kfd_topology: &BTreeMap<String, String>,
        stats: &mut ScanStats,
    ) -> io::Result<Option<ProcessSample>> {
        let live = self.root.is_live();
        let counts = self.fd_count_in_size;
        let opts = self.opts;
        let root = &self.root;
        let t = self.procs.get_mut(&pid).expect("tracked above");
        let due =
            |last: Option<Instant>, period| last.is_none_or(|l| now.duration_since(l) >= period);
        let must_scan = !live || !t.gpu.is_empty() || due(t.last_scan, opts.rescan_period);
        if !must_scan && !due(t.last_check, opts.check_period) {
            return Ok(None);
        }
        t.last_check = Some(now);
        let count = if counts {
            Some(pp::fd_count(root, pid)?)
        } else {
            None
        };
        let changed = count.is_none() || count != t.fd_count;
        if !must_scan && !changed {
            return Ok(None);
        }
        let dir = pp::open_fd_dir(root, pid)?;
        let table = pp::read_fd_table(root, &dir)?;
        stats.fd_tables_read += 1;
        t.fd_count = count;
        t.last_scan = Some(now);
        t.gpu = table.gpu;
        if t.gpu.is_empty() {
            t.meta = None;
            t.fdinfo_cache.clear();
            return Ok(None);
        }
        if t.meta.is_none() {
            t.meta = Some(read_meta(root, pid)?);
        }
        let mut drm = Vec::new();
        let mut other = Vec::new();
        for g in &t.gpu {
            if g.kind != GpuFdKind::Drm {
                other.push(g.clone());
                continue;
            }
            let sleeping = g.minor.as_ref().is_some_and(|m| asleep.contains(m));
            let cached = t
                .fdinfo_cache
                .get(&g.fd)
                .filter(|(at, _)| sleeping && now.duration_since(*at) < opts.asleep_period);
            let info = match cached {
                Some((_, info)) => info.clone(),
                None => match pp::read_fdinfo(root, pid, g.fd) {
                    Ok(text) => {
                        let info = FdInfo::parse(&text);
                        stats.malformed_lines += info.malformed;
                        t.fdinfo_cache.insert(g.fd, (now, info.clone()));
                        info
                    }
                    Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Err(e),
                    Err(_) => continue,
                },
            };
            drm.push(DrmFd {
                fd: g.fd,
                path: g.path.clone(),
                minor: g.minor.clone(),
                info,
            });
        }
        let live_fds: BTreeSet<u32> = t.gpu.iter().map(|g| g.fd).collect();
        t.fdinfo_cache.retain(|fd, _| live_fds.contains(fd));
        let mut p = t.meta.clone().expect("read above");
        p.ppid = p.ppid.or(t.ppid);
        p.drm = drm;
        p.pinned_shmem = if other.iter().any(|g| g.kind == GpuFdKind::Nvidia) {
            pp::read_dev_zero_rss(root, pid).ok()
        } else {
            None
        };
        p.kfd_vram = if other.iter().any(|g| g.kind == GpuFdKind::Kfd) {
            kfd::process_vram(root, pid, kfd_topology)
        } else {
            Vec::new()
        };
        p.other_gpu_fds = other;
        Ok(Some(p))
    }
}

fn read_meta(root: &Root, pid: u32) -> io::Result<ProcessSample> {
    let status = pp::read_status(root, pid).unwrap_or_default();
    Ok(ProcessSample {
        pid,
        ppid: status.ppid,
        comm: pp::read_comm(root, pid)?,
        cmdline: pp::read_cmdline(root, pid).unwrap_or_default(),
        env: pp::read_environ(root, pid).unwrap_or_default(),
        nspid: status.nspid,
        drm: Vec::new(),
        other_gpu_fds: Vec::new(),
        pinned_shmem: None,
        cgroup: cgroup::read_proc_cgroup(root, pid),
        kfd_vram: Vec::new(),
    })
}

fn capture_page_size(root: &Root) -> Option<u64> {
    let text = root.read_string("gpuledger-capture.json").ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("page_size")?.as_u64()
}
