//! What a view shows of a ledger and in what order: `--pid`/`--device` filters and `--sort`.
//!
//! Filtering comes after the findings, never before: findings are computed on the whole ledger
//! (a peer mirror needs its peer device, backing needs every mirror on the machine), then a view
//! shows the ledger restricted to the chosen pids and devices and the findings that concern them.
//! A filter therefore hides verdicts but never changes one.

use super::{Ledger, MemClass, ProcessRow};
use std::collections::BTreeSet;

/// What a record shown by a view concerns (a finding: its process, its device and peer device),
/// so that filtering it needs no knowledge of the findings layer above.
pub trait Subject {
    /// The process it concerns, if any.
    fn subject_pid(&self) -> Option<u32>;
    /// The devices it concerns (home, then peer), those it names.
    fn subject_devices(&self) -> [Option<&str>; 2];
}

/// A `--device` or `--pid` that matches nothing on the machine.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// No device has this PCI slot, minor or index.
    #[error("--device {given:?} matches none of the devices ({known}): give a PCI slot (0000:03:00.0), a DRM minor (card1, renderD129) or an index from 0")]
    NoSuchDevice {
        /// The value given.
        given: String,
        /// The devices there are, as `0=0000:03:00.0 (card0 renderD128)`, or `no GPU device`.
        known: String,
    },
    /// The pid holds no GPU memory and no GPU fd.
    #[error("--pid {pid}: no such process holds GPU memory or a GPU fd here; run without --pid to list those that do")]
    NoGpuProcess {
        /// The pid.
        pid: u32,
    },
}

/// The pids and devices a view is restricted to; empty sets mean "all".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pids: BTreeSet<u32>,
    devices: BTreeSet<String>,
}

impl Filter {
    /// Resolves `--pid` and `--device` values against a ledger. A device is a PCI slot
    /// (`0000:03:00.0`, or `03:00.0` in domain 0), a DRM minor (`card1`, `renderD129`), or an
    /// index in the ledger's device order (the order of the snapshot's device table).
    pub fn resolve(
        ledger: &Ledger,
        pids: &[u32],
        devices: &[String],
    ) -> Result<Filter, FilterError> {
        let known: Vec<(&str, &[String])> = ledger
            .devices
            .iter()
            .map(|d| (d.id.as_str(), d.minors.as_slice()))
            .collect();
        let known_pids: Vec<u32> = ledger.processes.iter().map(|p| p.pid).collect();
        Filter::resolve_in(&known_pids, &known, pids, devices)
    }

    /// Resolves against any set of pids and devices (id, minors) in display order: a recording's
    /// processes and devices, say. Every pid and every device given must be among them.
    pub fn resolve_in(
        known_pids: &[u32],
        known_devices: &[(&str, &[String])],
        pids: &[u32],
        devices: &[String],
    ) -> Result<Filter, FilterError> {
        if let Some(&pid) = pids.iter().find(|pid| !known_pids.contains(pid)) {
            return Err(FilterError::NoGpuProcess { pid });
        }
        let devices = devices
            .iter()
            .map(|given| device_id(known_devices, given))
            .collect::<Result<_, _>>()?;
        Ok(Filter {
            pids: pids.iter().copied().collect(),
            devices,
        })
    }

    /// Whether the filter lets everything through.
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.devices.is_empty()
    }

    /// Whether `pid` is shown.
    pub fn shows_pid(&self, pid: u32) -> bool {
        self.pids.is_empty() || self.pids.contains(&pid)
    }

    /// Whether `device` is shown.
    pub fn shows_device(&self, device: &str) -> bool {
        self.devices.is_empty() || self.devices.contains(device)
    }

    /// Whether a finding (or any record with the same subject fields) is shown: each subject
    /// field that is set must be shown. A finding about the host as a whole (no pid, no device)
    /// is always shown, and one about a device only (no pid) is shown under `--pid`.
    pub fn shows_subject(&self, pid: Option<u32>, devices: &[Option<&str>]) -> bool {
        let pid_ok = pid.is_none_or(|p| self.shows_pid(p));
        let named: Vec<&str> = devices.iter().flatten().copied().collect();
        let device_ok = named.is_empty() || named.iter().any(|d| self.shows_device(d));
        pid_ok && device_ok
    }

    /// The findings that concern a shown pid or device (a peer mirror shows when its home or its
    /// peer device is shown). They were computed on the whole ledger and are not changed.
    pub fn findings<T: Subject + Clone>(&self, findings: &[T]) -> Vec<T> {
        findings
            .iter()
            .filter(|f| self.shows(*f))
            .cloned()
            .collect()
    }

    /// Whether a record about a process and devices (a finding) is shown ([`Filter::shows_subject`]).
    pub fn shows<T: Subject + ?Sized>(&self, x: &T) -> bool {
        self.shows_subject(x.subject_pid(), &x.subject_devices())
    }

    /// The ledger restricted to the shown pids and devices. Host totals stay machine-wide (they
    /// are the kernel's counters, not sums of what is shown); a process is kept when it is shown
    /// and still holds memory or a client on a shown device.
    pub fn ledger(&self, ledger: Ledger) -> Ledger {
        if self.is_empty() {
            return ledger;
        }
        let mut out = ledger;
        out.devices.retain(|d| self.shows_device(&d.id));
        out.clients.retain(|c| {
            self.shows_device(&c.device) && c.holders.iter().any(|h| self.shows_pid(h.0))
        });
        let holds = |pid: u32| {
            out.clients
                .iter()
                .any(|c| c.holders.iter().any(|h| h.0 == pid))
        };
        let processes = std::mem::take(&mut out.processes);
        out.processes = processes
            .into_iter()
            .filter(|p| self.shows_pid(p.pid))
            .filter_map(|mut p| {
                let had_usage = !p.usage.is_empty();
                p.usage.retain(|u| self.shows_device(&u.device));
                let keep =
                    !p.usage.is_empty() || holds(p.pid) || (!had_usage && self.devices.is_empty());
                keep.then_some(p)
            })
            .collect();
        let shown_cgroups: BTreeSet<&str> = out
            .processes
            .iter()
            .filter_map(|p| p.cgroup.as_deref())
            .collect();
        let cgroups = std::mem::take(&mut out.cgroups);
        out.cgroups = cgroups
            .into_iter()
            .filter(|c| shown_cgroups.contains(c.path.as_str()))
            .collect();
        out
    }
}

/// One `--device` value as one of the known device ids.
fn device_id(known: &[(&str, &[String])], given: &str) -> Result<String, FilterError> {
    let want = given.trim().to_ascii_lowercase();
    let in_domain_0 = format!("0000:{want}");
    let found = known.iter().enumerate().find(|(i, (id, minors))| {
        let id = id.to_ascii_lowercase();
        id == want
            || id == in_domain_0
            || minors.iter().any(|m| m.eq_ignore_ascii_case(&want))
            || want.parse::<usize>().is_ok_and(|n| n == *i)
    });
    match found {
        Some((_, (id, _))) => Ok(id.to_string()),
        None => Err(FilterError::NoSuchDevice {
            given: given.to_string(),
            known: known_devices(known),
        }),
    }
}

fn known_devices(known: &[(&str, &[String])]) -> String {
    if known.is_empty() {
        return "no GPU device".into();
    }
    known
        .iter()
        .enumerate()
        .map(|(i, (id, minors))| match minors.is_empty() {
            true => format!("{i}={id}"),
            false => format!("{i}={id} ({})", minors.join(" ")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Process order for `--sort` and `top`'s `s` key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortKey {
    /// Host-class resident bytes, largest first.
    Host,
    /// Device-local resident bytes, largest first.
    Local,
    /// Rank, then pid (processes without a rank last): the ledger's own order.
    #[default]
    Rank,
    /// Pid.
    Pid,
}

impl SortKey {
    /// How views name it.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Host => "host-class",
            SortKey::Local => "device-local",
            SortKey::Rank => "rank",
            SortKey::Pid => "pid",
        }
    }

    /// Sorts processes (stable: ties keep the ledger's rank-then-pid order).
    pub fn sort(self, processes: &mut [ProcessRow]) {
        let total = |p: &ProcessRow, class: MemClass| -> u64 {
            p.usage
                .iter()
                .filter(|u| u.class == class)
                .filter_map(|u| u.resident)
                .fold(0, u64::saturating_add)
        };
        match self {
            SortKey::Host => processes.sort_by_key(|p| std::cmp::Reverse(total(p, MemClass::Host))),
            SortKey::Local => {
                processes.sort_by_key(|p| std::cmp::Reverse(total(p, MemClass::Device)))
            }
            SortKey::Rank => processes.sort_by_key(|p| (p.rank.is_none(), p.rank, p.pid)),
            SortKey::Pid => processes.sort_by_key(|p| p.pid),
        }
    }
}

#[cfg(test)]
mod tests;
