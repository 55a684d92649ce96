//! The simulated machine as a pure function of time (see the module doc of `sim`).

use super::death::{self, Failure};
use super::fdinfo_text;
use super::truth::{self, Mirror, Truth};
use crate::sources::drm_devices::DeviceInfo;
use crate::sources::kmsg::KmsgRecord;
use crate::sources::sim_job::{JobEnd, JobOutcome, JOB_END_SCHEMA};

const KIB: u64 = 1024;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// The seed's repeated segment, 3,174,400 KiB as measured there. (The report calls it a
/// 512×2048×795 fp32 buffer, but that is 3,256,320 KiB; 3,174,400 KiB is 512×2048×775 fp32.)
pub const SEED_SEGMENT: u64 = 3_174_400 * KIB;
const LAUNCHER_PID: u32 = 4000;
/// A rank's ordinary GTT on its home card at start (the seed's 627.7 MiB).
const BASE_GTT: u64 = 642_792 * KIB;
/// Of it, pinned host pages (the seed's 0.67 GiB of GPUActive over two ranks).
const BASE_PINNED: u64 = 351_272 * KIB;
/// A context's VRAM on a card a rank does not compute on (the seed's 186.8 MiB).
const CONTEXT_VRAM: u64 = 191_268 * KIB;
/// Share of the run at which the job ends by itself.
const JOB_END: f64 = 0.9;

/// What is simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// The seed: DDP ranks whose segments are mirrored as GTT on every peer device.
    DdpPeerMirror,
    /// One rank on one GPU, healthy.
    SingleGpu,
    /// One process whose host-class memory grows until the end.
    Leak,
    /// Two tensor-parallel ranks on amdgpu, no mirror.
    AmdgpuTp,
    /// DDP ranks with a context on every device and no peer registrations (a runtime without
    /// the defect): nothing is mirrored.
    DdpHealthy,
    /// One process over `ranks` devices (intel/llvm#22873): each device's GTT mirrors the
    /// allocations on the others.
    OneProcess,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 6] = [
        Scenario::DdpPeerMirror,
        Scenario::SingleGpu,
        Scenario::Leak,
        Scenario::AmdgpuTp,
        Scenario::DdpHealthy,
        Scenario::OneProcess,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::DdpPeerMirror => "ddp-peer-mirror",
            Scenario::SingleGpu => "single-gpu",
            Scenario::Leak => "leak",
            Scenario::AmdgpuTp => "amdgpu-tp",
            Scenario::DdpHealthy => "ddp-healthy",
            Scenario::OneProcess => "one-process",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Whether peer registrations are backed by pinned host pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// Pinned at registration (compute-runtime 26.22).
    Eager,
    /// Bookkeeping only (26.05).
    Deferred,
}

/// Parameters of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    /// Scenario.
    pub scenario: Scenario,
    /// Ranks (one GPU each).
    pub ranks: u32,
    /// Peer-registration backing.
    pub backing: Backing,
    /// Host RAM.
    pub host_mem: u64,
    /// Device segments each rank's caching allocator creates, in order.
    pub segments: Vec<u64>,
    /// Length of the simulated run, seconds.
    pub duration_s: f64,
    /// Whether the kernel has GPUActive (Linux 7.1+); without it only the residual shows pins.
    pub gpu_accounting: bool,
    /// Ranks confined to one device (`ZE_AFFINITY_MASK`): no peer fds.
    pub single_device: bool,
    /// Environment the ranks see (debug keys, masks), as the simulator was given it.
    pub env: Vec<(String, String)>,
}

impl SimParams {
    /// The defaults of a scenario.
    pub fn new(scenario: Scenario) -> SimParams {
        let (ranks, segments) = match scenario {
            Scenario::DdpPeerMirror | Scenario::DdpHealthy | Scenario::OneProcess => {
                (2, vec![SEED_SEGMENT; 6])
            }
            Scenario::SingleGpu => (1, vec![SEED_SEGMENT; 4]),
            Scenario::Leak => (1, vec![256 * MIB; 40]),
            Scenario::AmdgpuTp => (2, vec![16 * GIB; 4]),
        };
        SimParams {
            scenario,
            ranks,
            backing: Backing::Eager,
            host_mem: 64 * GIB,
            segments,
            duration_s: 60.0,
            gpu_accounting: true,
            single_device: false,
            env: Vec::new(),
        }
    }

    /// Applies the runtime variables the simulated job would obey: `NEOReadDebugKeys=1` with
    /// `EnableDeferBacking=0` → deferred backing; a one-device `ZE_AFFINITY_MASK` → no peers.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) {
        let debug = get("NEOReadDebugKeys").as_deref() == Some("1");
        for name in ["NEOReadDebugKeys", "EnableDeferBacking", "ZE_AFFINITY_MASK"] {
            if let Some(v) = get(name) {
                self.env.push((name.to_string(), v));
            }
        }
        if debug && get("EnableDeferBacking").as_deref() == Some("0") {
            self.backing = Backing::Deferred;
        }
        if get("ZE_AFFINITY_MASK").is_some_and(|m| !m.contains(',') && !m.is_empty()) {
            self.single_device = true;
        }
    }
}

/// One simulated process.
#[derive(Debug, Clone, PartialEq)]
pub struct SimProcess {
    /// Pid.
    pub pid: u32,
    /// Parent pid.
    pub ppid: u32,
    /// comm.
    pub comm: String,
    /// cmdline.
    pub cmdline: Vec<String>,
    /// Environment.
    pub env: Vec<(String, String)>,
    /// (fd, minor, fdinfo text).
    pub fds: Vec<(u32, String, String)>,
}

/// The machine at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct SimState {
    /// Seconds since the start of the run.
    pub t_s: f64,
    /// `/proc/meminfo` text.
    pub meminfo: String,
    /// `/proc/vmstat` text.
    pub vmstat: String,
    /// Devices.
    pub devices: Vec<DeviceInfo>,
    /// Processes.
    pub processes: Vec<SimProcess>,
    /// Whether the job still runs.
    pub job_running: bool,
    /// Whether the job died of host-memory exhaustion.
    pub died: bool,
    /// The kernel log so far (`dev/kmsg` records), oldest first.
    pub kernel_log: Vec<KmsgRecord>,
    /// How the job ended, once it has.
    pub job_end: Option<JobEnd>,
    /// What gpuledger must find in this state (`gpuledger-sim/truth.json`).
    pub truth: Truth,
}

/// A simulated run.
#[derive(Debug, Clone)]
pub struct Simulation {
    params: SimParams,
    /// Share of the run at which the job dies, if it does.
    death: Option<f64>,
}

struct RankMem {
    home_vram: u64,
    home_gtt: u64,
    /// (device index, gtt, vram) for each peer fd.
    peers: Vec<(u32, u64, u64)>,
    pinned: u64,
    /// (device whose allocation is mirrored, device holding the mirror, bytes).
    mirrors: Vec<(u32, u32, u64)>,
}

impl Simulation {
    /// Prepares a run.
    pub fn new(params: SimParams) -> Simulation {
        let mut sim = Simulation {
            params,
            death: None,
        };
        sim.death = sim.find_death();
        sim
    }

    /// The moment a one-shot `simulate` writes: the working set at its plateau, or just before
    /// the job dies.
    pub fn busiest_t(&self) -> f64 {
        let plateau = 0.75;
        let frac = match self.death {
            Some(d) if d <= plateau => (d - 0.001).max(0.0),
            _ => plateau,
        };
        frac * self.params.duration_s
    }

    /// When the job dies of host-memory exhaustion, seconds into the run; `None` if it does not.
    pub fn death_t(&self) -> Option<f64> {
        self.death.map(|d| d * self.params.duration_s)
    }

    /// The moment a one-shot `simulate` writes: just after the death when the job dies (so the
    /// tree holds the evidence a dead job leaves), else the plateau.
    pub fn snapshot_t(&self) -> f64 {
        self.death_t().unwrap_or_else(|| self.busiest_t())
    }

    /// The parameters.
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    fn other_use(&self) -> u64 {
        self.params.host_mem / 10 * 3
    }

    /// When segment `i` is created, as a share of the run.
    fn segment_at(&self, i: usize) -> f64 {
        let n = self.params.segments.len().max(1) as f64;
        match self.params.scenario {
            Scenario::Leak => 0.05 + 0.95 * i as f64 / n,
            _ => 0.1 + 0.5 * i as f64 / n,
        }
    }

    fn segments_by(&self, frac: f64) -> usize {
        (0..self.params.segments.len())
            .take_while(|&i| self.segment_at(i) <= frac)
            .count()
    }

    fn find_death(&self) -> Option<f64> {
        let room = (self.params.host_mem as f64 * 0.98) as u64;
        (0..=self.params.segments.len()).find_map(|k| {
            let pinned: u64 = (0..self.processes())
                .map(|r| self.rank_mem(r, k).pinned)
                .sum();
            let at = if k == 0 { 0.0 } else { self.segment_at(k - 1) };
            (self.other_use() + pinned > room).then_some(at)
        })
    }

    fn peer_count(&self) -> u32 {
        let spans = matches!(
            self.params.scenario,
            Scenario::DdpPeerMirror | Scenario::DdpHealthy | Scenario::OneProcess
        );
        if self.params.single_device || !spans {
            0
        } else {
            self.params.ranks.saturating_sub(1)
        }
    }

    /// GPU processes of the job: one per rank, or one over every device.
    fn processes(&self) -> u32 {
        match self.params.scenario {
            Scenario::OneProcess => 1,
            _ => self.params.ranks,
        }
    }

    fn rank_mem(&self, rank: u32, segs: usize) -> RankMem {
        let p = &self.params;
        let made: u64 = p.segments.iter().take(segs).sum();
        let eager = p.backing == Backing::Eager;
        match p.scenario {
            Scenario::DdpPeerMirror | Scenario::SingleGpu | Scenario::DdpHealthy => {
                let registered = if p.scenario == Scenario::DdpHealthy {
                    0
                } else {
                    made
                };
                let peers: Vec<(u32, u64, u64)> = (0..p.ranks)
                    .filter(|&d| d != rank && self.peer_count() > 0)
                    .map(|d| (d, 4 * MIB + registered, CONTEXT_VRAM))
                    .collect();
                let mirrors: Vec<(u32, u32, u64)> = peers
                    .iter()
                    .filter(|_| registered > 0)
                    .map(|&(d, _, _)| (rank, d, registered))
                    .collect();
                let mirrored = if eager {
                    registered * peers.len() as u64
                } else {
                    0
                };
                RankMem {
                    home_vram: 512 * MIB + made,
                    home_gtt: BASE_GTT,
                    pinned: BASE_PINNED + mirrored,
                    peers,
                    mirrors,
                }
            }
            Scenario::OneProcess => self.one_process_mem(made),
            Scenario::Leak => RankMem {
                home_vram: 2 * GIB,
                home_gtt: 64 * MIB + made,
                peers: Vec::new(),
                pinned: 64 * MIB + made,
                mirrors: Vec::new(),
            },
            Scenario::AmdgpuTp => RankMem {
                home_vram: GIB + made,
                home_gtt: 512 * MIB,
                peers: Vec::new(),
                pinned: 512 * MIB,
                mirrors: Vec::new(),
            },
        }
    }

    /// One process over every device: each device holds `made` of VRAM and, as GTT on its fd,
    /// a registration of every other device's `made` (intel/llvm#22873 with two devices).
    fn one_process_mem(&self, made: u64) -> RankMem {
        let others = u64::from(self.peer_count());
        let mirrored_per_device = made * others;
        let peers: Vec<(u32, u64, u64)> = (1..=self.peer_count())
            .map(|d| (d, 4 * MIB + mirrored_per_device, 512 * MIB + made))
            .collect();
        let mut mirrors = Vec::new();
        if made > 0 {
            for holder in 0..=self.peer_count() {
                for source in (0..=self.peer_count()).filter(|&s| s != holder) {
                    mirrors.push((source, holder, made));
                }
            }
        }
        let eager = self.params.backing == Backing::Eager;
        RankMem {
            home_vram: 512 * MIB + made,
            home_gtt: BASE_GTT + mirrored_per_device,
            pinned: BASE_PINNED
                + if eager {
                    mirrored_per_device * (others + 1)
                } else {
                    0
                },
            peers,
            mirrors,
        }
    }

    fn device(&self, i: u32) -> DeviceInfo {
        let (bus, driver, vendor, device) = match self.params.scenario {
            Scenario::AmdgpuTp => (0xc1 + i, "amdgpu", "0x1002", "0x74a1"),
            _ => (0x03 + i, "xe", "0x8086", "0xe223"),
        };
        DeviceInfo {
            id: format!("0000:{bus:02x}:00.0"),
            minors: vec![format!("card{i}"), format!("renderD{}", 128 + i)],
            driver: Some(driver.into()),
            name: crate::sources::pci_names::device_name(vendor, device),
            vendor: Some(vendor.into()),
            device: Some(device.into()),
            runtime_status: Some("active".into()),
            vram_total: None,
            vram_used: None,
            vis_vram_total: None,
            vis_vram_used: None,
            gtt_total: None,
            gtt_used: None,
            local_totals: Default::default(),
            integrated: None,
        }
    }

    /// The machine `t_s` seconds into the run.
    pub fn state_at(&self, t_s: f64) -> SimState {
        let p = &self.params;
        let frac = (t_s / p.duration_s).max(0.0);
        let end = if p.scenario == Scenario::Leak {
            f64::INFINITY
        } else {
            JOB_END
        };
        // In seconds, as `death_t` gives it, so `state_at(death_t())` is the dead state.
        let died = self.death_t().is_some_and(|d| t_s >= d);
        let job_running = !died && frac < end;
        let segs = self.segments_by(frac);
        let devices: Vec<DeviceInfo> = (0..p.ranks).map(|i| self.device(i)).collect();
        let mut processes = Vec::new();
        let mut pinned = 0;
        let mut mirrors = Vec::new();
        if job_running {
            processes.push(SimProcess {
                pid: LAUNCHER_PID,
                ppid: 1,
                comm: "torchrun".into(),
                cmdline: vec![
                    "/usr/bin/python3".into(),
                    "/usr/bin/torchrun".into(),
                    format!("--nproc-per-node={}", p.ranks),
                    "train.py".into(),
                ],
                env: p.env.clone(),
                fds: Vec::new(),
            });
            for r in 0..self.processes() {
                let m = self.rank_mem(r, segs);
                pinned += m.pinned;
                let proc = self.rank_process(r, &m, &devices);
                mirrors.extend(self.mirrors(&proc, r, &m, &devices));
                processes.push(proc);
            }
        }
        SimState {
            truth: truth::expected(
                self.truth_base(t_s, job_running, died, pinned),
                mirrors,
                &self.failed_pids(died),
            ),
            t_s,
            kernel_log: self.kernel_log(died),
            job_end: self.job_end(frac, died, end),
            meminfo: self.meminfo(pinned),
            vmstat: format!(
                "nr_free_pages 1000\nnr_gpu_active {}\nnr_gpu_reclaim 0\n",
                pinned / 4096
            ),
            devices,
            processes,
            job_running,
            died,
        }
    }

    /// The mirror relations of one process, as the ground truth names them.
    fn mirrors(
        &self,
        proc: &SimProcess,
        r: u32,
        m: &RankMem,
        devices: &[DeviceInfo],
    ) -> Vec<Mirror> {
        let pinned = self.params.backing == Backing::Eager;
        let rank = (self.params.scenario != Scenario::OneProcess).then_some(r);
        m.mirrors
            .iter()
            .map(|&(source, holder, bytes)| Mirror {
                pid: proc.pid,
                rank,
                home: devices[r as usize].id.clone(),
                source: devices[source as usize].id.clone(),
                peer: devices[holder as usize].id.clone(),
                bytes,
                pinned,
            })
            .collect()
    }

    fn truth_base(&self, t_s: f64, job_running: bool, died: bool, pinned: u64) -> Truth {
        Truth {
            schema: truth::SCHEMA.into(),
            scenario: self.params.scenario.name().into(),
            t_s,
            job_running,
            died,
            driver_held: pinned,
            mirrors: Vec::new(),
            findings: Vec::new(),
        }
    }

    /// The processes whose allocation the kernel failed, once the job has died of it.
    fn failed_pids(&self, died: bool) -> Vec<u32> {
        match self.failure() {
            Some(f) if died => (0..f.ranks).map(|r| f.first_pid + r).collect(),
            _ => Vec::new(),
        }
    }

    fn failure(&self) -> Option<Failure> {
        Some(Failure {
            t_s: self.death_t()?,
            first_pid: LAUNCHER_PID + 1,
            ranks: self.processes(),
            launcher: LAUNCHER_PID,
        })
    }

    fn kernel_log(&self, died: bool) -> Vec<KmsgRecord> {
        match self.failure() {
            Some(f) if died => death::kernel_records(&f),
            _ => Vec::new(),
        }
    }

    /// The end record once the job has ended: died (exit 1 from the launcher) or finished at
    /// `end` (exit 0).
    fn job_end(&self, frac: f64, died: bool, end: f64) -> Option<JobEnd> {
        let (outcome, end_s, exit_code, output_tail) = match self.failure() {
            Some(f) if died => (
                JobOutcome::HostMemoryExhausted,
                f.t_s,
                1,
                death::output_tail(&f),
            ),
            _ if frac >= end => (
                JobOutcome::Exited,
                end * self.params.duration_s,
                0,
                Vec::new(),
            ),
            _ => return None,
        };
        Some(JobEnd {
            schema: JOB_END_SCHEMA.into(),
            scenario: self.params.scenario.name().into(),
            outcome,
            end_s,
            exit_code: Some(exit_code),
            signal: None,
            boot_usec: death::boot_usec(end_s),
            output_tail,
        })
    }

    fn rank_process(&self, r: u32, m: &RankMem, devices: &[DeviceInfo]) -> SimProcess {
        let p = &self.params;
        let pid = LAUNCHER_PID + 1 + r;
        let text = |client: u64, dev: u32, gtt: u64, vram: u64| match p.scenario {
            Scenario::AmdgpuTp => fdinfo_text::amdgpu(client, &devices[dev as usize].id, gtt, vram),
            _ => fdinfo_text::xe(client, &devices[dev as usize].id, gtt, vram),
        };
        let minor = |d: u32| format!("renderD{}", 128 + d);
        let mut fds = vec![(
            10 + r,
            minor(r),
            text(
                u64::from(pid) * 100 + u64::from(r),
                r,
                m.home_gtt,
                m.home_vram,
            ),
        )];
        for &(d, gtt, vram) in &m.peers {
            fds.push((
                10 + d,
                minor(d),
                text(u64::from(pid) * 100 + u64::from(d), d, gtt, vram),
            ));
        }
        fds.sort_by_key(|f| f.0);
        let mut env = if p.scenario == Scenario::OneProcess {
            Vec::new()
        } else {
            vec![
                ("RANK".to_string(), r.to_string()),
                ("LOCAL_RANK".to_string(), r.to_string()),
                ("WORLD_SIZE".to_string(), p.ranks.to_string()),
                ("LOCAL_WORLD_SIZE".to_string(), p.ranks.to_string()),
            ]
        };
        env.extend(p.env.iter().cloned());
        SimProcess {
            pid,
            ppid: LAUNCHER_PID,
            comm: "python3".into(),
            cmdline: vec!["/usr/bin/python3".into(), "-u".into(), "train.py".into()],
            env,
            fds,
        }
    }

    fn meminfo(&self, pinned: u64) -> String {
        let total = self.params.host_mem;
        let kb = |b: u64| b / 1024;
        let anon = self.other_use();
        let cached = total / 20;
        let slab = 600 * MIB;
        let residual = pinned + 100 * MIB;
        let free = total.saturating_sub(anon + cached + slab + residual + 100 * MIB);
        let avail = free + cached / 10 * 8 + slab / 2;
        let mut s = String::new();
        for (k, v) in [
            ("MemTotal", total),
            ("MemFree", free),
            ("MemAvailable", avail),
            ("Buffers", 100 * MIB),
            ("Cached", cached),
            ("AnonPages", anon),
            ("Slab", slab),
            ("SReclaimable", slab / 2),
            ("KernelStack", 0),
            ("PageTables", 0),
            ("VmallocUsed", 0),
            ("Percpu", 0),
        ] {
            s.push_str(&format!("{:<16}{:>10} kB\n", format!("{k}:"), kb(v)));
        }
        s.push_str("HugePages_Total:       0\nHugepagesize:       2048 kB\n");
        if self.params.gpu_accounting {
            s.push_str(&format!(
                "{:<16}{:>10} kB\nGPUReclaim:              0 kB\n",
                "GPUActive:",
                kb(pinned)
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_active(state: &SimState) -> u64 {
        let line = state
            .meminfo
            .lines()
            .find(|l| l.starts_with("GPUActive:"))
            .unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    }

    #[test]
    fn eager_pins_every_peer_registration() {
        let sim = Simulation::new(SimParams::new(Scenario::DdpPeerMirror));
        let plateau = sim.state_at(45.0);
        assert!(plateau.job_running && !plateau.died);
        assert_eq!(
            gpu_active(&plateau),
            2 * (351_272 * 1024 + 6 * SEED_SEGMENT)
        );
        let done = sim.state_at(59.0);
        assert!(!done.job_running && done.processes.is_empty());
        assert_eq!(gpu_active(&done), 0, "released on exit");
    }

    #[test]
    fn deferred_keeps_registrations_as_bookkeeping() {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.apply_env(|k| match k {
            "NEOReadDebugKeys" => Some("1".into()),
            "EnableDeferBacking" => Some("0".into()),
            _ => None,
        });
        assert_eq!(p.backing, Backing::Deferred);
        let s = Simulation::new(p).state_at(45.0);
        assert_eq!(gpu_active(&s), 2 * 351_272 * 1024, "the seed's 0.67 GiB");
    }

    #[test]
    fn four_ranks_exhaust_host_memory_and_die() {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.ranks = 4;
        let sim = Simulation::new(p);
        assert!(sim.death.is_some());
        let s = sim.state_at(45.0);
        assert!(s.died && s.processes.is_empty());
    }

    #[test]
    fn affinity_mask_removes_peers() {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.apply_env(|k| (k == "ZE_AFFINITY_MASK").then(|| "0".to_string()));
        let s = Simulation::new(p).state_at(45.0);
        assert!(s.processes.iter().all(|p| p.fds.len() <= 1));
    }

    #[test]
    fn eight_ranks_die_at_the_first_segment_and_leave_evidence() {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.ranks = 8;
        let sim = Simulation::new(p);
        assert_eq!(
            sim.death_t(),
            Some(6.0),
            "the first segment, at 10 % of 60 s"
        );
        assert_eq!(sim.snapshot_t(), 6.0);
        let before = sim.state_at(5.9);
        assert!(before.kernel_log.is_empty() && before.job_end.is_none());
        assert_eq!(before.processes.len(), 9);
        let after = sim.state_at(6.0);
        assert!(after.died && after.processes.is_empty());
        let failures = after
            .kernel_log
            .iter()
            .filter(|r| r.message.contains("page allocation failure: order:0"))
            .count();
        assert_eq!(failures, 8);
        let end = after.job_end.unwrap();
        assert_eq!(
            (end.outcome, end.exit_code),
            (JobOutcome::HostMemoryExhausted, Some(1))
        );
        assert!(end
            .output_tail
            .iter()
            .any(|l| l.contains(death::RUNTIME_ERROR)));
    }

    #[test]
    fn a_job_that_finishes_exits_zero_with_an_empty_kernel_log() {
        let sim = Simulation::new(SimParams::new(Scenario::DdpPeerMirror));
        assert_eq!(sim.death_t(), None);
        assert_eq!(sim.state_at(45.0).job_end, None);
        let done = sim.state_at(59.0);
        let end = done.job_end.unwrap();
        assert_eq!(
            (end.outcome, end.exit_code, end.end_s),
            (JobOutcome::Exited, Some(0), 54.0)
        );
        assert!(done.kernel_log.is_empty());
    }
}
