//! Memory the counters cannot see but the job's traced calls can: host pages pinned in place
//! (`cudaHostRegister`, measured on an H200 to move no counter, docs/DESIGN.md "API-level
//! attribution"). Each registering process gets a host-class row of its own, so the job's
//! host-class total (`guard --max-job-host-gpu`) and `driver_held_host`'s per-process attribution
//! include it. The machine-wide driver-held figure does not: those pages stay in the process's
//! own anonymous memory as meminfo counts it.

use super::{Ledger, MemClass, Usage, UsageSource};
use std::collections::BTreeMap;

/// The region name of registered host memory.
pub const REGISTERED_REGION: &str = "registered";

impl Ledger {
    /// Adds each process's registered host bytes (pid → bytes live) as a host-class row on its
    /// home device (else the first device it uses); a pid the ledger does not hold, or one with
    /// no GPU device, is left out (there is no device to put the row on).
    pub fn add_registered(&mut self, registered: &BTreeMap<u32, u64>) {
        for p in &mut self.processes {
            let Some(&bytes) = registered.get(&p.pid).filter(|b| **b > 0) else {
                continue;
            };
            let device = p
                .home_device
                .clone()
                .or_else(|| p.usage.first().map(|u| u.device.clone()));
            let Some(device) = device else {
                continue;
            };
            p.usage.push(Usage {
                device,
                region: REGISTERED_REGION.into(),
                class: MemClass::Host,
                total: Some(bytes),
                resident: Some(bytes),
                shared: None,
                purgeable: None,
                active: None,
                source: UsageSource::ApiTrace,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::ProcessRow;

    fn process(pid: u32, device: Option<&str>) -> ProcessRow {
        ProcessRow {
            pid,
            comm: "python3".into(),
            home_device: device.map(str::to_string),
            usage: device
                .map(|d| Usage {
                    device: d.into(),
                    region: "vram".into(),
                    class: MemClass::Device,
                    total: None,
                    resident: Some(600 << 20),
                    shared: None,
                    purgeable: None,
                    active: None,
                    source: UsageSource::Nvml,
                })
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn registered_bytes_count_as_the_process_host_class_memory() {
        let mut l = Ledger {
            processes: vec![process(7, Some("0000:00:06.0")), process(8, None)],
            ..Default::default()
        };
        let before = l.resident_total(MemClass::Host);
        l.add_registered(&BTreeMap::from([(7, 2 << 30), (8, 1 << 30), (9, 1 << 30)]));
        assert_eq!(before, 0);
        assert_eq!(l.resident_total(MemClass::Host), 2 << 30);
        let row = l.processes[0].usage.last().unwrap();
        assert_eq!(
            (row.region.as_str(), row.source),
            (REGISTERED_REGION, UsageSource::ApiTrace)
        );
        assert_eq!(
            l.processes[0].resident("0000:00:06.0", MemClass::Host),
            2 << 30
        );
    }
}
