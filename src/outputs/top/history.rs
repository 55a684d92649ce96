//! What `top` keeps of the last samples for its sparklines: driver-held host memory and the
//! host-class and device-local totals of the machine, of each device and of each process.
//! Series are oldest first and at most [`HISTORY`] samples long; a device or process that has
//! gone is dropped with its series.

use crate::ledger::{Ledger, MemClass, ProcessRow};
use std::collections::{BTreeMap, VecDeque};

/// Samples kept per series.
pub const HISTORY: usize = 300;

/// Host-class and device-local bytes of the last samples, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pair {
    /// Host-class resident bytes (GTT / system).
    pub host: VecDeque<u64>,
    /// Device-local resident bytes (VRAM / local).
    pub local: VecDeque<u64>,
}

impl Pair {
    fn push(&mut self, host: u64, local: u64) {
        for (s, v) in [(&mut self.host, host), (&mut self.local, local)] {
            s.push_back(v);
            while s.len() > HISTORY {
                s.pop_front();
            }
        }
    }
}

/// The series of every sample since `top` started (at most [`HISTORY`] each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Driver-held host memory (0 where the kernel gives no counter).
    pub driver_held: VecDeque<u64>,
    /// The machine's totals.
    pub total: Pair,
    /// Per device id: the bytes every process holds through it.
    pub devices: BTreeMap<String, Pair>,
    /// Per pid: the bytes the process holds on all its devices.
    pub processes: BTreeMap<u32, Pair>,
}

fn process_total(p: &ProcessRow, class: MemClass) -> u64 {
    p.usage
        .iter()
        .filter(|u| u.class == class)
        .filter_map(|u| u.resident)
        .fold(0, u64::saturating_add)
}

impl History {
    /// Takes one sample's ledger in.
    pub fn push(&mut self, l: &Ledger) {
        self.driver_held
            .push_back(l.host.driver_held().map_or(0, |d| d.bytes));
        while self.driver_held.len() > HISTORY {
            self.driver_held.pop_front();
        }
        self.total.push(
            l.resident_total(MemClass::Host),
            l.resident_total(MemClass::Device),
        );
        self.devices
            .retain(|id, _| l.devices.iter().any(|d| &d.id == id));
        for d in &l.devices {
            let of = |class| {
                l.processes
                    .iter()
                    .map(|p| p.resident(&d.id, class))
                    .fold(0, u64::saturating_add)
            };
            let (host, local) = (of(MemClass::Host), of(MemClass::Device));
            self.devices
                .entry(d.id.clone())
                .or_default()
                .push(host, local);
        }
        self.processes
            .retain(|pid, _| l.processes.iter().any(|p| p.pid == *pid));
        for p in &l.processes {
            let host = process_total(p, MemClass::Host);
            let local = process_total(p, MemClass::Device);
            self.processes.entry(p.pid).or_default().push(host, local);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Usage;
    use crate::sources::drm_devices::DeviceInfo;

    fn ledger(pids: &[(u32, u64)]) -> Ledger {
        let usage = |bytes| Usage {
            device: "0000:03:00.0".into(),
            region: "gtt".into(),
            class: MemClass::Host,
            source: Default::default(),
            total: None,
            resident: Some(bytes),
            shared: None,
            purgeable: None,
            active: None,
        };
        Ledger {
            devices: vec![DeviceInfo {
                id: "0000:03:00.0".into(),
                ..Default::default()
            }],
            processes: pids
                .iter()
                .map(|&(pid, bytes)| ProcessRow {
                    pid,
                    usage: vec![usage(bytes)],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn series_follow_devices_and_processes_and_stay_bounded() {
        let mut h = History::default();
        h.push(&ledger(&[(1, 10), (2, 5)]));
        h.push(&ledger(&[(1, 20)]));
        assert_eq!(h.processes[&1].host, [10, 20]);
        assert!(!h.processes.contains_key(&2), "a gone process is dropped");
        assert_eq!(h.devices["0000:03:00.0"].host, [15, 20]);
        assert_eq!(h.total.host, [15, 20]);
        assert_eq!(h.total.local, [0, 0]);
        for _ in 0..HISTORY {
            h.push(&ledger(&[(1, 1)]));
        }
        assert_eq!(h.processes[&1].host.len(), HISTORY);
        assert_eq!(h.driver_held.len(), HISTORY);
    }
}
