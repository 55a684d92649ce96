//! `guard`: stop a job before the kernel starts failing allocations.
//!
//! The policy is a pure function of a ledger. Signals go only to the guarded job, through pidfds
//! opened while each process was known alive, so a pid that is reused after the job's process
//! exited is never signalled. A job that guard starts gets a cgroup of its own where the system
//! allows it ([`job_cgroup`]); its members are the job, and `cgroup.kill` ends them all. Without
//! one, the job's process group is signalled with `killpg` only while one of its members is still
//! alive: a live member pins the group id, so it cannot belong to anyone else.
//!
//! When to act is [`check`]; what to do over time (warn once, SIGTERM, SIGKILL after the grace, the
//! job's end and what it leaves behind) is [`machine`], which [`run`] steps on the system clock.

pub mod family;
pub mod job_cgroup;
pub mod machine;
pub mod run;

use crate::ledger::{Ledger, MemClass};
use crate::units::{human_bytes, human_bytes_apart, SizeSpec};
use job_cgroup::JobCgroup;
use rustix::fd::OwnedFd;
use rustix::process::{Pid, PidfdFlags, Signal};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::io;

/// When to act.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// MemAvailable floor (absolute, or a share of MemTotal).
    pub min_available: SizeSpec,
    /// Ceiling on driver-held host memory (GPUActive / nr_gpu_active / unaccounted).
    pub max_driver_held: Option<u64>,
    /// Ceiling on the host-class GPU memory that the job's own processes hold (every process row
    /// of the ledger, which guard scopes to the job).
    pub max_job_host_gpu: Option<u64>,
}

impl Policy {
    /// The limits in words: "MemAvailable below 5% of MemTotal; driver-held host memory above
    /// 6.0 GiB".
    pub fn describe(&self) -> String {
        let floor = match self.min_available {
            SizeSpec::Percent(p) => format!("{p}% of MemTotal"),
            SizeSpec::Bytes(b) => human_bytes(b),
        };
        let mut limits = vec![format!("MemAvailable below {floor}")];
        if let Some(max) = self.max_driver_held {
            limits.push(format!(
                "driver-held host memory above {}",
                human_bytes(max)
            ));
        }
        if let Some(max) = self.max_job_host_gpu {
            limits.push(format!(
                "the job's host-class GPU memory above {}",
                human_bytes(max)
            ));
        }
        limits.join("; ")
    }
}

/// Why the guard tripped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Trip {
    /// MemAvailable fell below the floor.
    LowAvailable {
        /// MemAvailable.
        available: u64,
        /// The floor.
        floor: u64,
    },
    /// The job's memory cgroup is closer to its `memory.max` than the floor (the floor is then
    /// resolved against `memory.max`).
    CgroupHeadroom {
        /// The cgroup.
        path: String,
        /// memory.current.
        current: u64,
        /// memory.max.
        max: u64,
        /// The headroom floor.
        floor: u64,
    },
    /// Driver-held host memory passed the ceiling.
    DriverHeld {
        /// Driver-held bytes.
        held: u64,
        /// The ceiling.
        max: u64,
        /// The counter.
        source: String,
    },
    /// The job's processes hold more host-class GPU memory than the ceiling.
    JobHostGpu {
        /// Host-class resident bytes over the job's processes.
        held: u64,
        /// The ceiling.
        max: u64,
    },
}

impl Trip {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Trip::LowAvailable { available, floor } => {
                let (available, floor) = human_bytes_apart(*available, *floor);
                format!("MemAvailable {available} is below the floor {floor}")
            }
            Trip::CgroupHeadroom {
                path,
                current,
                max,
                floor,
            } => {
                let (current, max_text) = human_bytes_apart(*current, *max);
                format!(
                    "the job's cgroup {path} uses {current} of its memory.max {max_text} (less \
                     than {} left)",
                    human_bytes(*floor)
                )
            }
            Trip::DriverHeld { held, max, source } => {
                let (held, max) = human_bytes_apart(*held, *max);
                format!("driver-held host memory {held} ({source}) is above the ceiling {max}")
            }
            Trip::JobHostGpu { held, max } => {
                let (held, max) = human_bytes_apart(*held, *max);
                format!(
                    "the job's processes hold {held} of host-class GPU memory, above \
                     --max-job-host-gpu {max}"
                )
            }
        }
    }
}

/// Checks a ledger (and the job's memory cgroup, when it has a limit) against the policy.
pub fn check(
    policy: &Policy,
    ledger: &Ledger,
    cgroup: Option<&crate::sources::cgroup::CgroupInfo>,
) -> Option<Trip> {
    if let Some((c, current, max)) =
        cgroup.and_then(|c| Some((c, c.memory_current?, c.memory_max?)))
    {
        let floor = policy.min_available.resolve(max);
        if max.saturating_sub(current) < floor {
            return Some(Trip::CgroupHeadroom {
                path: c.path.clone(),
                current,
                max,
                floor,
            });
        }
    }
    let h = &ledger.host;
    if let (Some(total), Some(available)) = (h.mem_total, h.mem_available) {
        let floor = policy.min_available.resolve(total);
        if available < floor {
            return Some(Trip::LowAvailable { available, floor });
        }
    }
    if let (Some(max), Some(e)) = (policy.max_driver_held, h.driver_held()) {
        if e.bytes > max {
            return Some(Trip::DriverHeld {
                held: e.bytes,
                max,
                source: e.counter.as_str().to_string(),
            });
        }
    }
    let held = job_host_gpu(ledger);
    match policy.max_job_host_gpu {
        Some(max) if held > max => Some(Trip::JobHostGpu { held, max }),
        _ => None,
    }
}

/// Host-class resident bytes held by the ledger's processes (guard's ledger holds only the job's):
/// GTT/system regions of DRM clients, KFD and NVIDIA `pinned-shmem` rows alike.
pub fn job_host_gpu(ledger: &Ledger) -> u64 {
    ledger.resident_total(MemClass::Host)
}

/// A process of the job that left the job's cgroup while alive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Escape {
    /// Its pid.
    pub pid: u32,
    /// The cgroup it is in now, when readable.
    pub cgroup: Option<String>,
}

/// The guarded processes, each held by a pidfd, and the job's cgroup when it has one.
#[derive(Debug, Default)]
pub struct Target {
    pidfds: BTreeMap<u32, OwnedFd>,
    pgid: Option<u32>,
    cgroup: Option<JobCgroup>,
    /// Whether the job's descendants and process group are followed (a job guard started),
    /// not only the held pids (`--pid`).
    family: bool,
    /// Whether guard is the job's subreaper, so its orphans are guard's children.
    adopts: bool,
    /// Held processes that are outside the job's cgroup.
    escaped: BTreeSet<u32>,
    /// Escapes not yet reported.
    news: Vec<Escape>,
    /// The earliest start time of a held process, clock ticks after boot.
    since: Option<u64>,
}

impl Target {
    /// A started job without a cgroup: its process group `pgid` (the job leader's pid) and its
    /// descendants.
    pub fn with_group(pgid: u32) -> Target {
        Target {
            pgid: Some(pgid),
            family: true,
            ..Default::default()
        }
    }

    /// A started job that is every process in `cgroup`, and every descendant of those that
    /// leave it.
    pub fn contained(cgroup: JobCgroup) -> Target {
        Target {
            cgroup: Some(cgroup),
            family: true,
            ..Default::default()
        }
    }

    /// Counts guard's own children among the job's (guard is the job's subreaper:
    /// [`family::adopt_orphans`]).
    pub fn adopting(mut self) -> Target {
        self.adopts = true;
        self
    }

    /// The job's cgroup, when it has one.
    pub fn cgroup(&self) -> Option<&JobCgroup> {
        self.cgroup.as_ref()
    }

    /// Starts holding `pid` (no-op if held already or gone).
    pub fn add(&mut self, pid: u32) {
        if self.pidfds.contains_key(&pid) {
            return;
        }
        if let Some(fd) = Pid::from_raw(pid as i32)
            .and_then(|p| rustix::process::pidfd_open(p, PidfdFlags::empty()).ok())
        {
            self.pidfds.insert(pid, fd);
        }
    }

    /// Holds every process now in the job's cgroup, its descendants and its process group, and
    /// lets go of those that exited, so a job that keeps starting short-lived processes does
    /// not pile up pidfds. A held process found outside the job's cgroup is an [`Escape`]. No-op
    /// for `--pid`s.
    pub fn refresh(&mut self) {
        if !self.family {
            return;
        }
        self.pidfds
            .retain(|_, fd| !pidfd_exited(fd).unwrap_or(true));
        let members: BTreeSet<u32> = self
            .cgroup
            .as_ref()
            .map(|cg| cg.pids().into_iter().collect())
            .unwrap_or_default();
        let me = std::process::id();
        let mut roots: BTreeSet<u32> = self.pidfds.keys().chain(&members).copied().collect();
        if self.adopts {
            roots.insert(me);
        }
        let table = family::scan();
        let kin = family::kin(&table, &roots, self.pgid);
        for p in table.iter().filter(|p| p.pid != me) {
            let wanted = members.contains(&p.pid) || kin.contains(&p.pid);
            if wanted || self.pidfds.contains_key(&p.pid) {
                self.since = Some(self.since.map_or(p.start, |s| s.min(p.start)));
            }
            if wanted && !self.pidfds.contains_key(&p.pid) {
                if let Some(fd) = self.open_kin(p, &members, &roots) {
                    self.pidfds.insert(p.pid, fd);
                }
            }
        }
        self.note_escapes(&members);
    }

    /// A pidfd for `p` if, once opened, it is still what the table said: in the cgroup, or
    /// still the child of a held process, or still in the job's group (a pid reused in between
    /// is none of these).
    fn open_kin(
        &self,
        p: &family::Proc,
        members: &BTreeSet<u32>,
        roots: &BTreeSet<u32>,
    ) -> Option<OwnedFd> {
        let fd =
            rustix::process::pidfd_open(Pid::from_raw(p.pid as i32)?, PidfdFlags::empty()).ok()?;
        if members.contains(&p.pid) {
            return self.cgroup.as_ref()?.contains(p.pid).then_some(fd);
        }
        let now = family::read(p.pid)?;
        let same = now.ppid == p.ppid
            && (roots.contains(&now.ppid) || self.pidfds.contains_key(&now.ppid));
        (same || Some(now.pgrp) == self.pgid).then_some(fd)
    }

    /// Marks held processes outside the job's cgroup (none without one) and queues the news.
    fn note_escapes(&mut self, members: &BTreeSet<u32>) {
        let Some(cg) = &self.cgroup else { return };
        self.escaped.retain(|p| self.pidfds.contains_key(p));
        for &pid in self.pidfds.keys() {
            if !members.contains(&pid) && !cg.contains(pid) && self.escaped.insert(pid) {
                self.news.push(Escape {
                    pid,
                    cgroup: job_cgroup::cgroup_of(pid),
                });
            }
        }
    }

    /// Processes of the job that left its cgroup since the last call.
    pub fn take_escapes(&mut self) -> Vec<Escape> {
        std::mem::take(&mut self.news)
    }

    /// The pids held (with a cgroup: its members now, and those that left it).
    pub fn pids(&mut self) -> Vec<u32> {
        self.refresh();
        self.pidfds.keys().copied().collect()
    }

    /// Sends `sig` to every held process that is still alive (with a cgroup: to every member,
    /// SIGKILL also through `cgroup.kill`; without: also to the job's process group while a
    /// member lives). Returns the pids signalled.
    pub fn signal(&mut self, sig: Signal) -> Vec<u32> {
        self.refresh();
        let mut hit = Vec::new();
        self.pidfds.retain(
            |pid, fd| match rustix::process::pidfd_send_signal(&*fd, sig) {
                Ok(()) => {
                    hit.push(*pid);
                    true
                }
                Err(_) => false,
            },
        );
        match (&self.cgroup, self.pgid) {
            (Some(cg), _) if sig == Signal::KILL => {
                cg.kill();
            }
            (None, Some(pgid)) if !hit.is_empty() => {
                if let Some(p) = Pid::from_raw(pgid as i32) {
                    let _ = rustix::process::kill_process_group(p, sig);
                }
            }
            _ => {}
        }
        hit
    }

    /// Sends `sig` to every held process but `main` (which was sent it already), for a signal
    /// guard itself received. Returns the pids signalled.
    pub fn relay(&mut self, sig: Signal, main: u32) -> Vec<u32> {
        self.refresh();
        let mut hit = Vec::new();
        for (pid, fd) in self.pidfds.iter().filter(|(pid, _)| **pid != main) {
            if rustix::process::pidfd_send_signal(fd, sig).is_ok() {
                hit.push(*pid);
            }
        }
        hit
    }

    /// Whether any guarded process is still running: a member of the job's cgroup, or a held
    /// process whose pidfd has not become readable (an exit makes it).
    pub fn alive(&mut self) -> bool {
        self.left() > 0
    }

    /// How many of the job's processes are still running (cgroup members and held processes).
    pub fn left(&mut self) -> usize {
        self.survivors().len()
    }

    /// The job's processes still running: cgroup members and held processes, the main
    /// process included while it has not been reaped.
    pub fn survivors(&mut self) -> Vec<u32> {
        self.refresh();
        self.pidfds
            .retain(|_, fd| !pidfd_exited(fd).unwrap_or(true));
        let mut all: BTreeSet<u32> = self.pidfds.keys().copied().collect();
        if let Some(cg) = &self.cgroup {
            all.extend(cg.pids());
        }
        all.into_iter().collect()
    }

    /// Processes outside the job that a multiplexer server of this user, running since before
    /// the job, started while it ran (`tmux new-session -d …` in the job reaches a server that
    /// is not the job's): guard cannot stop them, so they are said, with the multiplexers.
    pub fn handed_off(&mut self) -> (Vec<&'static str>, Vec<u32>) {
        let Some(since) = self.since.filter(|_| self.family) else {
            return (Vec::new(), Vec::new());
        };
        let mut job: BTreeSet<u32> = self.pidfds.keys().copied().collect();
        if let Some(cg) = &self.cgroup {
            job.extend(cg.pids());
        }
        let uid = rustix::process::getuid().as_raw();
        let mine = |pid| family::owner(pid) == Some(uid);
        let (via, pids) = family::handed_off(&family::scan(), since, &job, mine);
        (
            via.into_iter().map(|m| m.as_str()).collect(),
            pids.into_iter().collect(),
        )
    }

    /// Whether this target follows the job's family (a started job), so what its main process
    /// leaves behind can be counted.
    pub fn follows_family(&self) -> bool {
        self.family
    }
}

/// A pidfd for `pid` if, once opened, the process it refers to is in `cg`: a pid read from
/// `cgroup.procs` that was reused in between names a process outside, and is skipped.
pub(crate) fn open_member(cg: &JobCgroup, pid: u32) -> Option<OwnedFd> {
    let fd = rustix::process::pidfd_open(Pid::from_raw(pid as i32)?, PidfdFlags::empty()).ok()?;
    cg.contains(pid).then_some(fd)
}

/// Whether the process behind a pidfd has exited (the pidfd polls readable).
fn pidfd_exited(fd: &OwnedFd) -> io::Result<bool> {
    let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    Ok(rustix::event::poll(&mut fds, Some(&zero))? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::HostTotals;

    fn ledger(total: u64, avail: u64, gpu: Option<u64>) -> Ledger {
        Ledger {
            host: HostTotals {
                mem_total: Some(total),
                mem_available: Some(avail),
                gpu_active: gpu,
                gpu_active_source: gpu.map(|_| "GPUActive".to_string()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn policy() {
        let p = Policy {
            min_available: SizeSpec::Percent(10.0),
            max_driver_held: Some(8 << 30),
            max_job_host_gpu: None,
        };
        assert_eq!(
            check(&p, &ledger(100 << 30, 50 << 30, Some(1 << 30)), None),
            None
        );
        assert_eq!(
            check(&p, &ledger(100 << 30, 9 << 30, None), None),
            Some(Trip::LowAvailable {
                available: 9 << 30,
                floor: 10 << 30
            })
        );
        assert!(matches!(
            check(&p, &ledger(100 << 30, 50 << 30, Some(9 << 30)), None),
            Some(Trip::DriverHeld { .. })
        ));
    }

    #[test]
    fn job_host_gpu_counts_only_the_jobs_host_class_rows() {
        let p = Policy {
            min_available: SizeSpec::Percent(1.0),
            max_driver_held: None,
            max_job_host_gpu: Some(6 << 30),
        };
        let row = |region: &str, class, gib: u64| crate::ledger::Usage {
            device: "0000:18:00.0".into(),
            region: region.into(),
            class,
            total: None,
            resident: Some(gib << 30),
            shared: None,
            purgeable: None,
            active: None,
            source: crate::ledger::UsageSource::Nvml,
        };
        let mut l = ledger(100 << 30, 50 << 30, None);
        l.processes.push(crate::ledger::ProcessRow {
            pid: 7001,
            nspid: Vec::new(),
            comm: "python3".into(),
            cmdline: Vec::new(),
            rank: None,
            local_rank: None,
            home_device: None,
            usage: vec![
                row("vram", MemClass::Device, 40),
                row("pinned-shmem", MemClass::Host, 4),
            ],
            env: BTreeMap::new(),
            shared_with_others: Vec::new(),
            has_nvidia_fds: true,
            has_kfd_fd: false,
            cgroup: None,
            labels: Default::default(),
            engines: Vec::new(),
        });
        assert_eq!(check(&p, &l, None), None, "VRAM is not host-class");
        l.processes[0].usage.push(row("gtt", MemClass::Host, 3));
        assert_eq!(
            check(&p, &l, None),
            Some(Trip::JobHostGpu {
                held: 7 << 30,
                max: 6 << 30
            })
        );
    }

    #[test]
    fn cgroup_limit_is_the_floor_reference() {
        let p = Policy {
            min_available: SizeSpec::Percent(10.0),
            max_driver_held: None,
            max_job_host_gpu: None,
        };
        let cg = crate::sources::cgroup::CgroupInfo {
            path: "/slurm/job_7".into(),
            memory_current: Some(95 << 30),
            memory_max: Some(100 << 30),
            ..Default::default()
        };
        let trip = check(&p, &ledger(1 << 40, 1 << 39, None), Some(&cg));
        assert!(matches!(trip, Some(Trip::CgroupHeadroom { floor, .. }) if floor == 10 << 30));
        let roomy = crate::sources::cgroup::CgroupInfo {
            memory_current: Some(10 << 30),
            ..cg
        };
        assert_eq!(
            check(&p, &ledger(1 << 40, 1 << 39, None), Some(&roomy)),
            None
        );
    }

    #[test]
    fn a_reaped_process_is_never_signalled_again() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .unwrap();
        let mut t = Target::default();
        t.add(child.id());
        assert_eq!(t.pids(), vec![child.id()]);
        child.wait().unwrap();
        // The pid may now be reused by anyone; the pidfd still refers to the old process.
        assert!(!t.alive());
        assert!(t.signal(Signal::KILL).is_empty());
    }
}
