//! `guard`: stop a job before the kernel starts failing allocations.
//!
//! The policy is a pure function of a ledger. Signals go only to the guarded job, through pidfds
//! opened while each process was known alive, so a pid that is reused after the job's process
//! exited is never signalled. The job's process group is signalled with `killpg` only while one of
//! its members is still alive: a live member pins the group id, so it cannot belong to anyone else.

use crate::ledger::Ledger;
use crate::units::{human_bytes, SizeSpec};
use rustix::fd::OwnedFd;
use rustix::process::{Pid, Signal};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;

/// When to act.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// MemAvailable floor (absolute, or a share of MemTotal).
    pub min_available: SizeSpec,
    /// Ceiling on driver-held host memory (GPUActive / nr_gpu_active / unaccounted).
    pub max_driver_held: Option<u64>,
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
}

impl Trip {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Trip::LowAvailable { available, floor } => format!(
                "MemAvailable {} is below the floor {}",
                human_bytes(*available),
                human_bytes(*floor)
            ),
            Trip::CgroupHeadroom {
                path,
                current,
                max,
                floor,
            } => format!(
                "the job's cgroup {path} uses {} of its memory.max {} (less than {} left)",
                human_bytes(*current),
                human_bytes(*max),
                human_bytes(*floor)
            ),
            Trip::DriverHeld { held, max, source } => format!(
                "driver-held host memory {} ({source}) is above the ceiling {}",
                human_bytes(*held),
                human_bytes(*max)
            ),
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
    match (policy.max_driver_held, h.driver_held()) {
        (Some(max), Some(e)) if e.bytes > max => Some(Trip::DriverHeld {
            held: e.bytes,
            max,
            source: e.counter.as_str().to_string(),
        }),
        _ => None,
    }
}

/// The guarded processes, each held by a pidfd.
#[derive(Debug, Default)]
pub struct Target {
    pidfds: BTreeMap<u32, OwnedFd>,
    pgid: Option<u32>,
}

impl Target {
    /// A target whose process group `pgid` (the job leader's pid) may be signalled.
    pub fn with_group(pgid: u32) -> Target {
        Target {
            pidfds: BTreeMap::new(),
            pgid: Some(pgid),
        }
    }

    /// Starts holding `pid` (no-op if held already or gone).
    pub fn add(&mut self, pid: u32) {
        if self.pidfds.contains_key(&pid) {
            return;
        }
        let Some(p) = Pid::from_raw(pid as i32) else {
            return;
        };
        if let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) {
            self.pidfds.insert(pid, fd);
        }
    }

    /// The pids held.
    pub fn pids(&self) -> Vec<u32> {
        self.pidfds.keys().copied().collect()
    }

    /// Sends `sig` to every held process that is still alive (and to the job's process group
    /// while a member lives). Returns the pids signalled.
    pub fn signal(&mut self, sig: Signal) -> Vec<u32> {
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
        if let (Some(pgid), false) = (self.pgid, hit.is_empty()) {
            if let Some(p) = Pid::from_raw(pgid as i32) {
                let _ = rustix::process::kill_process_group(p, sig);
            }
        }
        hit
    }

    /// Whether any held process is still running (an exited one makes its pidfd readable).
    pub fn alive(&mut self) -> bool {
        self.pidfds
            .retain(|_, fd| !pidfd_exited(fd).unwrap_or(true));
        !self.pidfds.is_empty()
    }
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
    fn cgroup_limit_is_the_floor_reference() {
        let p = Policy {
            min_available: SizeSpec::Percent(10.0),
            max_driver_held: None,
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
