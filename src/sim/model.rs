//! The simulated machine as a pure function of time (see the module doc of `sim`).

use super::cards::Card;
use super::death::{self, Failure};
use super::memory::{self, ProcMem};
use super::nvidia;
use super::params::{Backing, Scenario, SimParams, MIB};
use super::state::{SimFd, SimProcess, SimState};
use super::truth::{self, Mirror, Truth};
use super::visibility::{self, Visibility};
use crate::findings::Severity;
use crate::sources::drm_devices::DeviceInfo;
use crate::sources::kmsg::KmsgRecord;
use crate::sources::sim_job::{JobEnd, JobOutcome, JOB_END_SCHEMA};

const LAUNCHER_PID: u32 = 4000;
/// Share of the run at which the job ends by itself.
const JOB_END: f64 = 0.9;

/// A simulated run.
#[derive(Debug, Clone)]
pub struct Simulation {
    params: SimParams,
    cards: Vec<Card>,
    /// Share of the run at which the job dies, if it does.
    death: Option<f64>,
}

impl Simulation {
    /// Prepares a run.
    pub fn new(params: SimParams) -> Simulation {
        let n = params.ranks;
        let cards = match params.scenario {
            Scenario::AmdgpuTp => vec![Card::Amdgpu; n as usize],
            Scenario::XeAmdgpu => (0..n)
                .map(|i| {
                    if i % 2 == 0 {
                        Card::XeDiscrete
                    } else {
                        Card::Amdgpu
                    }
                })
                .collect(),
            Scenario::ApuDgpu => std::iter::once(Card::XeIntegrated)
                .chain(std::iter::repeat_n(Card::XeDiscrete, n as usize))
                .collect(),
            Scenario::NvidiaDdp => vec![Card::Nvidia; n as usize],
            _ => vec![Card::XeDiscrete; n as usize],
        };
        let mut sim = Simulation {
            params,
            cards,
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
                .map(|r| self.proc_mem(r, k))
                .map(|m| m.pinned + m.shmem_pinned)
                .sum();
            let at = if k == 0 { 0.0 } else { self.segment_at(k - 1) };
            (self.other_use() + pinned > room).then_some(at)
        })
    }

    /// GPU processes of the job: one per rank, or one over every device.
    fn processes(&self) -> u32 {
        if self.params.scenario.one_process() {
            1
        } else {
            self.params.ranks
        }
    }

    fn proc_mem(&self, r: u32, segs: usize) -> ProcMem {
        let made: u64 = self.params.segments.iter().take(segs).sum();
        memory::of(&self.params, &self.cards, r, made)
    }

    /// The PCI slot of card `i`.
    fn slot(&self, i: u32) -> String {
        let amdgpu_only = self.params.scenario == Scenario::AmdgpuTp;
        self.cards[i as usize].slot(i, amdgpu_only)
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
        let devices: Vec<DeviceInfo> = (0..self.cards.len() as u32)
            .filter_map(|i| self.cards[i as usize].device_info(i, self.slot(i)))
            .collect();
        let mut processes = Vec::new();
        let mut mems = Vec::new();
        let mut mirrors = Vec::new();
        if job_running {
            processes.push(self.launcher());
            for r in 0..self.processes() {
                let m = self.proc_mem(r, segs);
                let proc = self.rank_process(r, &m);
                mirrors.extend(self.mirrors(&proc, r, &m));
                mems.push((proc.pid, m));
                processes.push(proc);
            }
        }
        let pinned: u64 = mems.iter().map(|(_, m)| m.pinned).sum();
        let shmem: u64 = mems.iter().map(|(_, m)| m.shmem_pinned).sum();
        let integrated: u64 = mems
            .iter()
            .map(|(_, m)| m.integrated_host(&self.cards))
            .sum();
        let nvml = if p.scenario == Scenario::NvidiaDdp {
            let slots: Vec<String> = (0..p.ranks).map(|i| self.slot(i)).collect();
            nvidia::nvml(&slots, &mems)
        } else {
            Vec::new()
        };
        let mut base = self.truth_base(t_s, job_running, died, pinned + shmem);
        base.driver_held_ceiling = self.driver_held_ceiling(pinned + shmem, integrated);
        SimState {
            truth: truth::expected(base, mirrors, &self.failed_pids(died)),
            t_s,
            kernel_log: self.kernel_log(died),
            job_end: self.job_end(frac, died, end),
            meminfo: self.meminfo(pinned, shmem),
            vmstat: format!(
                "nr_free_pages 1000\nnr_gpu_active {}\nnr_gpu_reclaim 0\n",
                pinned / 4096
            ),
            devices,
            nvml,
            processes,
            job_running,
            died,
        }
    }

    /// The most severe `driver_held_host` the truth allows: on a machine whose integrated GPU
    /// holds working memory, `info` while what the driver holds beyond that working memory is
    /// below the finding's floor (the integrated GPU's memory is its VRAM, not a blowup).
    fn driver_held_ceiling(&self, held: u64, integrated: u64) -> Option<Severity> {
        let t = crate::findings::Thresholds::default();
        let floor = t
            .driver_held_min_bytes
            .max((self.params.host_mem as f64 * t.driver_held_min_share) as u64);
        (integrated > 0 && held.saturating_sub(integrated) < floor).then_some(Severity::Info)
    }

    /// The mirror relations of one process, as the ground truth names them.
    fn mirrors(&self, proc: &SimProcess, r: u32, m: &ProcMem) -> Vec<Mirror> {
        let pinned = self.params.backing == Backing::Pinned;
        let rank = (!self.params.scenario.one_process()).then_some(r);
        m.mirrors
            .iter()
            .map(|&(source, holder, bytes)| Mirror {
                pid: proc.pid,
                rank,
                home: self.slot(m.home),
                source: self.slot(source),
                peer: self.slot(holder),
                bytes,
                pinned,
            })
            .collect()
    }

    fn truth_base(&self, t_s: f64, job_running: bool, died: bool, held: u64) -> Truth {
        Truth {
            schema: truth::SCHEMA.into(),
            scenario: self.params.scenario.name().into(),
            t_s,
            job_running,
            died,
            driver_held: held,
            driver_held_ceiling: None,
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

    fn launcher(&self) -> SimProcess {
        SimProcess {
            pid: LAUNCHER_PID,
            ppid: 1,
            comm: "torchrun".into(),
            cmdline: vec![
                "/usr/bin/python3".into(),
                "/usr/bin/torchrun".into(),
                format!("--nproc-per-node={}", self.params.ranks),
                "train.py".into(),
            ],
            env: self.params.env.clone(),
            fds: Vec::new(),
            smaps: None,
        }
    }

    fn rank_process(&self, r: u32, m: &ProcMem) -> SimProcess {
        let p = &self.params;
        let pid = LAUNCHER_PID + 1 + r;
        let mut fds: Vec<SimFd> = m
            .fds
            .iter()
            .map(|&(d, host, local)| {
                let card = self.cards[d as usize];
                let client = u64::from(pid) * 100 + u64::from(d);
                let target = match card {
                    Card::Nvidia => format!("/dev/nvidia{d}"),
                    _ => format!("/dev/dri/renderD{}", 128 + d),
                };
                SimFd {
                    fd: 10 + d,
                    target,
                    fdinfo: card.fdinfo(client, &self.slot(d), host, local),
                }
            })
            .collect();
        if self.cards.contains(&Card::Nvidia) {
            fds.extend(nvidia::control_fds());
        }
        fds.sort_by_key(|f| f.fd);
        let mut env = if p.scenario.one_process() {
            Vec::new()
        } else {
            vec![
                ("RANK".to_string(), r.to_string()),
                ("LOCAL_RANK".to_string(), r.to_string()),
                ("WORLD_SIZE".to_string(), p.ranks.to_string()),
                ("LOCAL_WORLD_SIZE".to_string(), p.ranks.to_string()),
            ]
        };
        if p.visibility != Visibility::All {
            let mut seen: Vec<u32> = m.fds.iter().map(|f| f.0).collect();
            seen.sort_unstable();
            let drivers: Vec<&str> = self.cards.iter().map(|c| c.driver()).collect();
            let given = |k: &str| p.env.iter().any(|(g, _)| g == k);
            env.extend(
                visibility::mask_env(&seen, &drivers)
                    .into_iter()
                    .filter(|(k, _)| !given(k)),
            );
        }
        env.extend(p.env.iter().cloned());
        SimProcess {
            pid,
            ppid: LAUNCHER_PID,
            comm: "python3".into(),
            cmdline: vec!["/usr/bin/python3".into(), "-u".into(), "train.py".into()],
            env,
            fds,
            smaps: (m.shmem_pinned > 0).then(|| nvidia::smaps(m.shmem_pinned)),
        }
    }

    /// `/proc/meminfo` with `pinned` TTM pages (GPUActive, and the residual) and `shmem` bytes
    /// of pinned shared mappings (in Shmem, so in Cached).
    fn meminfo(&self, pinned: u64, shmem: u64) -> String {
        let total = self.params.host_mem;
        let kb = |b: u64| b / 1024;
        let anon = self.other_use();
        let cached = total / 20;
        let slab = 600 * MIB;
        let residual = pinned + 100 * MIB;
        let free = total.saturating_sub(anon + cached + shmem + slab + residual + 100 * MIB);
        let avail = free + cached / 10 * 8 + slab / 2;
        let mut s = String::new();
        for (k, v) in [
            ("MemTotal", total),
            ("MemFree", free),
            ("MemAvailable", avail),
            ("Buffers", 100 * MIB),
            ("Cached", cached + shmem),
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
        if shmem > 0 {
            s.push_str(&format!("{:<16}{:>10} kB\n", "Shmem:", kb(shmem)));
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
    use crate::sim::params::SEED_SEGMENT;

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
    fn pinned_backing_pins_every_peer_registration() {
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
    fn enable_defer_backing_0_keeps_registrations_as_bookkeeping() {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.apply_env(|k| match k {
            "NEOReadDebugKeys" => Some("1".into()),
            "EnableDeferBacking" => Some("0".into()),
            _ => None,
        });
        assert_eq!(p.backing, Backing::RegisteredOnly);
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

    #[test]
    fn pairs_give_each_rank_its_pair_and_a_mask() {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.ranks = 4;
        p.visibility = Visibility::Pairs;
        // Pinned, four ranks' 18.2 GiB each would run 64 GiB of host RAM out.
        p.backing = Backing::RegisteredOnly;
        let s = Simulation::new(p).state_at(45.0);
        let rank3 = s
            .processes
            .iter()
            .find(|p| p.pid == LAUNCHER_PID + 4)
            .unwrap();
        let fds: Vec<u32> = rank3.fds.iter().map(|f| f.fd).collect();
        assert_eq!(fds, vec![12, 13], "cards 2 and 3");
        assert!(rank3
            .env
            .contains(&("ZE_AFFINITY_MASK".to_string(), "2,3".to_string())));
        let peers: Vec<&str> = s.truth.mirrors.iter().map(|m| m.peer.as_str()).collect();
        assert_eq!(
            peers,
            [
                "0000:04:00.0",
                "0000:03:00.0",
                "0000:06:00.0",
                "0000:05:00.0"
            ]
        );
    }

    #[test]
    fn nvidia_ranks_show_in_nvml_with_no_fdinfo() {
        let mut p = SimParams::new(Scenario::NvidiaDdp);
        p.ranks = 3;
        let s = Simulation::new(p).state_at(45.0);
        assert!(s.devices.is_empty(), "NVIDIA cards come from NVML");
        assert_eq!(s.nvml.len(), 3);
        assert!(s.nvml.iter().all(|g| g.processes.len() == 3));
        let rank = &s.processes[1];
        assert!(rank.fds.iter().all(|f| f.fdinfo.is_none()));
        assert!(rank.fds.iter().any(|f| f.target == "/dev/nvidia-uvm"));
        assert!(rank.smaps.as_deref().unwrap().contains("/dev/zero"));
        assert_eq!(s.truth.driver_held, 3 * 512 * MIB);
        assert!(s.truth.mirrors.is_empty());
    }

    #[test]
    fn an_integrated_gpu_holds_its_working_set_as_gtt() {
        let s = Simulation::new(SimParams::new(Scenario::ApuDgpu)).state_at(45.0);
        assert_eq!(s.devices[0].id, "0000:00:02.0");
        let fdinfo = s.processes[1].fds[0].fdinfo.clone().unwrap();
        assert!(!fdinfo.contains("vram0") && fdinfo.contains("drm-resident-gtt:\t8704 MiB"));
        assert_eq!(s.truth.driver_held_ceiling, Some(Severity::Info));
        assert!(s.truth.findings.is_empty());
    }
}
