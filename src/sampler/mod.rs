//! Builds [`Snapshot`]s from a [`Root`], cheaply enough to repeat at 10 Hz.
//!
//! A full scan reads every fd link of every process, which on a busy node costs as much as `fuser`.
//! Repeated sampling keeps per-process state instead: processes holding GPU fds are re-read every
//! sample (fd table and DRM fdinfo); new pids come from the `/proc` listing and get a full fd scan;
//! every other process has its fd count (`st_size` of `/proc/PID/fd`, Linux ≥ 6.2) checked once per
//! `check_period` (1 s, so a new DRM client is seen within about a second) and its table re-read
//! only when the count changed, plus a slow rotation every `rescan_period` for the rare
//! open-and-close that keeps the count.
//!
//! Reading a table again costs a `readlink` only for fd numbers that are new since the last read
//! (and for the GPU fds themselves): a number seen before as a non-GPU fd is known. Every link is
//! read again (a full read) when the process's start time changed (another process under the
//! same pid), for a GPU holder once per `check_period`, and for any other process at every
//! [`FULL_EVERY`]th rotation, staggered by pid so a rotation does a tenth of the full walk: a
//! number closed and reopened on a GPU device between two checks is seen within
//! `FULL_EVERY × rescan_period` (5 min) in a process holding no GPU fd yet, within a second in
//! one that does, and at the next sample with [`SamplerOptions::fresh`]. (A `stat` of
//! `/proc/PID/fd/N` to compare inodes would cost more than the `readlink` it saves.) fdinfo of a device that runtime PM reports suspended is
//! re-read only every `asleep_period`, because reading xe fdinfo wakes it; devices (and with them
//! which are asleep) are re-listed every `device_period`. The periods are measured on the
//! sampler's [`Clock`], which tests drive by hand ([`Sampler::with_clock`]).

mod fd_numbers;
mod issues;
#[cfg(test)]
mod tests;

use crate::clock::{self, Clock};
use crate::root::Root;
use crate::snapshot::{DrmFd, IssueReason, ProcessSample, ScanStats, Snapshot};
use crate::sources::cgroup;
use crate::sources::drm_devices::{scan_devices, DeviceInfo};
use crate::sources::drm_fdinfo::FdInfo;
use crate::sources::kfd;
use crate::sources::meminfo::{
    is_gpu_vmstat_key, parse_meminfo, parse_vmstat, read_meminfo, read_vmstat,
};
use crate::sources::nvml::{self, NvmlSource};
use crate::sources::proc_pid::{self as pp, GpuFd, GpuFdKind};
use fd_numbers::FdNumbers;
use issues::Outcome;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Every how many rotations a process's table is read in full (every link); the rotations in
/// between read the links of new fd numbers only. Staggered by pid, so each rotation reads a
/// tenth of the tables in full.
const FULL_EVERY: u32 = 10;

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

impl SamplerOptions {
    /// Every fd table re-read at every sample, whatever the clock says: for a few processes
    /// (guard's job) whose new GPU fds must count at the very next sample. Asleep devices and the
    /// device list keep their default periods.
    pub fn fresh() -> SamplerOptions {
        SamplerOptions {
            check_period: Duration::ZERO,
            rescan_period: Duration::ZERO,
            ..SamplerOptions::default()
        }
    }
}

/// A sample could not be taken at all.
#[derive(Debug, Error)]
pub enum SampleError {
    /// The root has no readable `proc/`.
    #[error("cannot list {root}/proc; is this a capture tree (see `gpuledger capture`) or the live machine?")]
    NoProc {
        /// The root's label.
        root: String,
        /// The cause.
        source: io::Error,
    },
}

/// What the sampler remembers of every listed process. Most processes hold no GPU fd, and on a
/// large node they are hundreds of thousands: they cost these few words and no strings.
#[derive(Debug)]
struct Tracked {
    ppid: Option<u32>,
    fd_count: Option<u64>,
    last_check: Option<Instant>,
    last_scan: Option<Instant>,
    /// When every link of the table was last read.
    last_full: Option<Instant>,
    /// Rotations (`rescan_period` re-reads) so far: every [`FULL_EVERY`]th reads every link.
    rotations: u32,
    /// The fd numbers as last read: a number among them that is no GPU fd needs no `readlink`
    /// until the next full read.
    fds: FdNumbers,
    /// The start time read with the last full read: the same pid with another start time is
    /// another process, read in full.
    start_time: Option<u64>,
    gpu: Option<Box<GpuHolder>>,
}

impl Tracked {
    /// Nothing known yet but the parent, when the scope needs it.
    fn new(ppid: Option<io::Result<Option<u32>>>) -> Tracked {
        Tracked {
            ppid: ppid.and_then(|r| r.ok().flatten()),
            fd_count: None,
            last_check: None,
            last_scan: None,
            last_full: None,
            rotations: 0,
            fds: FdNumbers::default(),
            start_time: None,
            gpu: None,
        }
    }
}

/// The state kept for a process that holds GPU fds.
#[derive(Debug, Default)]
struct GpuHolder {
    fds: Vec<GpuFd>,
    meta: Option<ProcessSample>,
    /// Each DRM fd's fdinfo text as last read: an asleep device's is parsed again from here
    /// (the text is one allocation; a parsed copy would be a deep clone of every fd's maps).
    fdinfo_cache: HashMap<u32, (Instant, String)>,
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
    /// Where the cadences and the snapshot's time come from.
    clock: Arc<dyn Clock>,
    /// fd links read since the sampler was made.
    links_read: u64,
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
            clock: clock::system(),
            links_read: 0,
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

    /// Reads time from `clock` (a manual clock in tests drives the cadences).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Sampler {
        self.clock = clock;
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

    /// fd links (`readlink` calls) read since the sampler was made: the discovery's work,
    /// which tests and benchmarks compare between samples.
    pub fn links_read(&self) -> u64 {
        self.links_read
    }

    /// Takes one sample.
    pub fn sample(&mut self) -> Result<Snapshot, SampleError> {
        let now = self.clock.now();
        let mut stats = ScanStats::default();
        let pids = pp::list_pids(&self.root).map_err(|source| SampleError::NoProc {
            root: self.root.label().to_string(),
            source,
        })?;
        stats.processes = pids.len() as u32;
        self.refresh_devices(now);
        let (meminfo, vmstat) = self.host_counters(&mut stats);

        // `pids` is sorted.
        self.procs.retain(|pid, _| pids.binary_search(pid).is_ok());
        let need_ppid = matches!(self.scope, Scope::Tree(_));
        // A captured tree is read in full every sample, so there only GPU holders (their metadata
        // and fdinfo cache) are remembered; the live machine's cadences need every pid.
        if self.root.is_live() || need_ppid {
            for &pid in &pids {
                let root = &self.root;
                self.procs
                    .entry(pid)
                    .or_insert_with(|| Tracked::new(need_ppid.then(|| pp::read_ppid(root, pid))));
            }
        }
        let nv = self
            .nvml
            .as_ref()
            .and_then(|n| n.gpus().ok())
            .unwrap_or_default();
        // NVML's memory in use is read every sample, as the per-process figures are: a device
        // total kept from an earlier sample would be compared with this instant's processes.
        for g in &nv {
            match self.devices.iter_mut().find(|d| d.id == g.bus_id) {
                Some(d) => {
                    d.vram_used = g.memory_used.or(d.vram_used);
                    d.vram_total = d.vram_total.or(g.memory_total);
                }
                None => self.devices.push(nvml::device_info(g)),
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
                Err(Outcome::Denied) => stats.unreadable += 1,
                Err(Outcome::Vanished) => {
                    stats.vanished += 1;
                    self.procs.remove(&pid);
                }
                // Noted by name already.
                Err(_) => {
                    self.procs.remove(&pid);
                }
            }
        }
        self.kfd_topology = kfd_topology;
        Ok(Snapshot {
            time_ms: self.clock.wall_ms(),
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
            pod_names: if processes
                .iter()
                .any(|p| p.cgroup.as_deref().is_some_and(|c| c.contains("pod")))
            {
                crate::sources::k8s_pods::read_pod_names(&self.root)
            } else {
                BTreeMap::new()
            },
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
        let meminfo = match read_meminfo(&self.root) {
            Ok(t) => {
                let parsed = parse_meminfo(&t);
                if !parsed.values.contains_key("MemTotal") {
                    issues::note(
                        stats,
                        "proc/meminfo",
                        IssueReason::Malformed,
                        "no MemTotal line: host totals are unknown".into(),
                    );
                }
                parsed
            }
            Err(e) => {
                issues::handle(stats, &self.root, "proc/meminfo", &e, true);
                Default::default()
            }
        };
        let vmstat = match read_vmstat(&self.root) {
            Ok(t) => parse_vmstat(&t, is_gpu_vmstat_key),
            Err(e) => {
                issues::handle(stats, &self.root, "proc/vmstat", &e, false);
                Default::default()
            }
        };
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

    /// Re-reads `pid`'s fd table when due; `Some` when it holds GPU fds. A failure comes back as
    /// its [`Outcome`], already noted by name when it is an issue.
    fn sample_process(
        &mut self,
        pid: u32,
        now: Instant,
        asleep: &BTreeSet<String>,
        kfd_topology: &BTreeMap<String, String>,
        stats: &mut ScanStats,
    ) -> Result<Option<ProcessSample>, Outcome> {
        let live = self.root.is_live();
        let counts = self.fd_count_in_size;
        let opts = self.opts;
        let root = &self.root;
        let t = self.procs.entry(pid).or_insert_with(|| Tracked::new(None));
        let due =
            |last: Option<Instant>, period| last.is_none_or(|l| now.duration_since(l) >= period);
        let must_scan = !live || t.gpu.is_some() || due(t.last_scan, opts.rescan_period);
        if !must_scan && !due(t.last_check, opts.check_period) {
            return Ok(None);
        }
        t.last_check = Some(now);
        let failed = |stats: &mut ScanStats, e: io::Error| {
            issues::handle(stats, root, &format!("proc/{pid}/fd"), &e, true)
        };
        let count = if counts {
            Some(pp::fd_count(root, pid).map_err(|e| failed(stats, e))?)
        } else {
            None
        };
        let changed = count.is_none() || count != t.fd_count;
        if !must_scan && !changed {
            return Ok(None);
        }
        let rotation = due(t.last_scan, opts.rescan_period);
        if rotation {
            t.rotations = t.rotations.wrapping_add(1);
        }
        let start_time = live.then(|| pp::read_start_time(root, pid).ok()).flatten();
        let full = !live
            || opts.rescan_period.is_zero()
            || start_time.is_none()
            || start_time != t.start_time
            || match t.gpu {
                Some(_) => due(t.last_full, opts.check_period),
                None => rotation && (t.rotations.wrapping_add(pid)) % FULL_EVERY == 0,
            };
        let gpu_fds: &[GpuFd] = t.gpu.as_ref().map_or(&[], |g| &g.fds);
        let known_other =
            |fd: u32| !full && t.fds.contains(fd) && !gpu_fds.iter().any(|g| g.fd == fd);
        let table = pp::open_fd_dir(root, pid)
            .and_then(|dir| pp::read_fd_table(root, &dir, known_other))
            .map_err(|e| failed(stats, e))?;
        stats.fd_tables_read += 1;
        self.links_read += u64::from(table.links_read);
        for (fd, e) in &table.failed {
            issues::handle(stats, root, &format!("proc/{pid}/fd/{fd}"), e, false);
        }
        t.fd_count = count;
        t.fds = FdNumbers::new(table.numbers);
        t.last_scan = Some(now);
        if full {
            t.last_full = Some(now);
            t.start_time = start_time;
        }
        if table.gpu.is_empty() {
            t.gpu = None;
            if !live {
                self.procs.remove(&pid);
            }
            return Ok(None);
        }
        let holder = t.gpu.get_or_insert_with(Box::default);
        holder.fds = table.gpu;
        let meta = match holder.meta.take() {
            Some(m) => m,
            None => read_meta(root, pid, stats)?,
        };
        let mut p = holder.meta.insert(meta).clone();
        p.ppid = p.ppid.or(t.ppid);
        let (drm, other) = read_gpu_fds(root, pid, holder, now, asleep, opts.asleep_period, stats)?;
        p.drm = drm;
        p.pinned_shmem = if other.iter().any(|g| g.kind == GpuFdKind::Nvidia) {
            pp::read_dev_zero_rss(root, pid)
                .map_err(|e| issues::handle(stats, root, &format!("proc/{pid}/smaps"), &e, false))
                .ok()
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

/// fdinfo of each DRM fd (cached for asleep devices), and the other GPU fds as they are.
fn read_gpu_fds(
    root: &Root,
    pid: u32,
    t: &mut GpuHolder,
    now: Instant,
    asleep: &BTreeSet<String>,
    asleep_period: Duration,
    stats: &mut ScanStats,
) -> Result<(Vec<DrmFd>, Vec<GpuFd>), Outcome> {
    let mut drm = Vec::new();
    let mut other = Vec::new();
    for g in &t.fds {
        if g.kind != GpuFdKind::Drm {
            other.push(g.clone());
            continue;
        }
        let sleeping = g.minor.as_ref().is_some_and(|m| asleep.contains(m));
        let cached = t
            .fdinfo_cache
            .get(&g.fd)
            .filter(|(at, _)| sleeping && now.duration_since(*at) < asleep_period);
        let info = match cached {
            Some((_, text)) => FdInfo::parse(text),
            None => match pp::read_fdinfo(root, pid, g.fd) {
                Ok(text) => {
                    let info = FdInfo::parse(&text);
                    stats.malformed_lines += info.malformed;
                    t.fdinfo_cache.insert(g.fd, (now, text));
                    info
                }
                Err(e) => {
                    let rel = format!("proc/{pid}/fdinfo/{}", g.fd);
                    match issues::handle(stats, root, &rel, &e, true) {
                        Outcome::Denied => return Err(Outcome::Denied),
                        // Closed since the listing, or noted by name.
                        _ => continue,
                    }
                }
            },
        };
        drm.push(DrmFd {
            fd: g.fd,
            path: g.path.clone(),
            minor: g.minor.clone(),
            info,
        });
    }
    let live_fds: BTreeSet<u32> = t.fds.iter().map(|g| g.fd).collect();
    t.fdinfo_cache.retain(|fd, _| live_fds.contains(fd));
    Ok((drm, other))
}

/// comm, cmdline, environ, status and cgroup of a GPU process, read once. A comm that cannot be
/// used is noted and shown as `?` rather than dropping the process's GPU memory from view.
fn read_meta(root: &Root, pid: u32, stats: &mut ScanStats) -> Result<ProcessSample, Outcome> {
    let comm = match pp::read_comm(root, pid) {
        Ok(c) => c,
        Err(e) => match issues::handle(stats, root, &format!("proc/{pid}/comm"), &e, true) {
            o @ (Outcome::Vanished | Outcome::Denied) => return Err(o),
            _ => "?".into(),
        },
    };
    let mut optional = |name: &str, e: io::Error| {
        issues::handle(stats, root, &format!("proc/{pid}/{name}"), &e, false);
    };
    let status = pp::read_status(root, pid)
        .map_err(|e| optional("status", e))
        .unwrap_or_default();
    let cmdline = pp::read_cmdline(root, pid)
        .map_err(|e| optional("cmdline", e))
        .unwrap_or_default();
    let env = pp::read_environ(root, pid)
        .map_err(|e| optional("environ", e))
        .unwrap_or_default();
    Ok(ProcessSample {
        pid,
        ppid: status.ppid,
        comm,
        cmdline,
        env,
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
