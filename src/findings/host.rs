//! Host-side findings: `driver_held_host` and `host_pressure`.

use super::{percent, Finding, Kind, Severity, Thresholds};
use crate::ledger::{HeldCounter, Ledger, MemClass};
use crate::units::human_bytes;

/// `mirrored`: whether peer_mirror findings stand beside it (the advice points to them only then).
pub(super) fn driver_held(ledger: &Ledger, t: &Thresholds, mirrored: bool) -> Option<Finding> {
    let e = ledger.host.driver_held()?;
    let held = e.bytes;
    let total = ledger.host.mem_total?;
    let per_fd = ledger.host_class_resident();
    // The residual alone is no proof of a GPU driver: only count it when GPU clients hold host memory.
    if e.counter == HeldCounter::Unaccounted && per_fd == 0 && e.pinned_shmem == 0 {
        return None;
    }
    let floor = t
        .driver_held_min_bytes
        .max((total as f64 * t.driver_held_min_share) as u64);
    if held < floor {
        return None;
    }
    // Attributed per process: DRM host-class bytes (each client once), KFD, NVIDIA pinned shmem.
    let attributed = ledger.resident_total(MemClass::Host);
    let explained = (attributed as f64 / held as f64).min(1.0);
    let what = if e.counter == HeldCounter::Unaccounted {
        format!(
            "{} of host RAM ({:.0} % of MemTotal) is held for GPUs with no kernel GPU counter explaining it ({}; this kernel has no GPUActive)",
            human_bytes(held),
            percent(held, total),
            e.parts()
        )
    } else {
        format!(
            "the GPU driver holds {} of host RAM ({}, {:.0} % of MemTotal)",
            human_bytes(held),
            e.parts(),
            percent(held, total)
        )
    };
    // An integrated GPU's host-class memory is its working memory: expected, not a blowup,
    // whether it is most of the host-class memory or all that lifts the total over the floor.
    let integrated = ledger.integrated_host_class_resident();
    let mostly_integrated = integrated > 0
        && (integrated as f64 >= per_fd as f64 * 0.5 || held.saturating_sub(integrated) < floor);
    let severity = if mostly_integrated {
        Severity::Info
    } else if held as f64 >= total as f64 * 0.25 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let advice = if mostly_integrated {
        format!(
            "{} of it is the working memory of integrated GPUs, which use host RAM as their VRAM",
            human_bytes(integrated)
        )
    } else if mirrored {
        "see the peer_mirror findings for whose memory it mirrors".to_string()
    } else if explained >= 0.5 {
        "no peer card mirrors it: it is the holders' own host-class GPU memory (pinned buffers, GTT)"
            .to_string()
    } else {
        "most of it is held by no process gpuledger sees (a driver's own pool, or processes that exited with memory still pinned)".to_string()
    };
    let holders = top_holders(ledger);
    let share = if attributed > held {
        format!(
            "all of it is attributed to processes{holders}, which hold {} in all, {} more than \
             the counter (per-fd figures and the kernel's counter file some pages differently)",
            human_bytes(attributed),
            human_bytes(attributed - held)
        )
    } else {
        format!(
            "{:.0} % of it ({}) is attributed to processes{holders}",
            explained * 100.0,
            human_bytes(attributed)
        )
    };
    let message = format!("{what}; {share}: {advice}; see --explain driver_held_host");
    Some(Finding {
        bytes: held,
        ratio: Some(explained),
        source: Some(e.counter.as_str().to_string()),
        ..Finding::new(Kind::DriverHeldHost, severity, message)
    })
}

pub(super) fn pressure(ledger: &Ledger, t: &Thresholds) -> Option<Finding> {
    let total = ledger.host.mem_total?;
    let avail = ledger.host.mem_available?;
    let gpu_host = ledger.host_class_resident();
    if gpu_host == 0 || avail as f64 >= total as f64 * t.pressure_available_share {
        return None;
    }
    let severity = if (avail as f64) < total as f64 * t.pressure_available_share / 2.0 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let message = format!(
        "MemAvailable is {} of {} ({:.0} %) while GPU clients hold {} of host-class memory: the kernel will soon fail allocations; stop the job or run it under `gpuledger guard`; see --explain host_pressure",
        human_bytes(avail),
        human_bytes(total),
        percent(avail, total),
        human_bytes(gpu_host)
    );
    Some(Finding {
        bytes: avail,
        ratio: Some(avail as f64 / total.max(1) as f64),
        source: Some("MemAvailable".into()),
        ..Finding::new(Kind::HostPressure, severity, message)
    })
}

/// ` (pid 7 python3 6.0 GiB, …)`: the three processes holding most host-class GPU memory.
fn top_holders(ledger: &Ledger) -> String {
    let mut holders: Vec<(u64, &crate::ledger::ProcessRow)> = ledger
        .processes
        .iter()
        .map(|p| {
            (
                p.usage
                    .iter()
                    .filter(|u| u.class == MemClass::Host)
                    .filter_map(|u| u.resident)
                    .sum(),
                p,
            )
        })
        .filter(|(b, _)| *b > 0)
        .collect();
    holders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.pid.cmp(&b.1.pid)));
    let named: Vec<String> = holders
        .iter()
        .take(3)
        .map(|(b, p)| format!("{} {}", p.label(), human_bytes(*b)))
        .collect();
    match (named.is_empty(), holders.len() > 3) {
        (true, _) => String::new(),
        (false, false) => format!(" ({})", named.join(", ")),
        (false, true) => format!(" ({}, and {} more)", named.join(", "), holders.len() - 3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::fixture::{client, host, ledger, process, GIB};
    use crate::ledger::HostTotals;

    const A: &str = "0000:03:00.0";

    /// One process with `gtt` of host-class memory on A, on a host of `totals`.
    fn machine(gtt: u64, totals: HostTotals) -> Ledger {
        let p = process(10, None, &[(A, MemClass::Host, gtt)]);
        let clients = if gtt > 0 {
            vec![client(10, A, "amdgpu", &[("gtt", gtt)])]
        } else {
            Vec::new()
        };
        ledger(&[A], vec![p], clients, totals)
    }

    #[test]
    fn a_quarter_of_host_ram_held_by_the_driver_is_critical() {
        let t = Thresholds::default();
        let f = driver_held(&machine(8 * GIB, host(20 * GIB, 32 * GIB)), &t, false).unwrap();
        assert_eq!(
            (f.kind, f.severity, f.bytes),
            (Kind::DriverHeldHost, Severity::Critical, 20 * GIB)
        );
        assert_eq!(f.source.as_deref(), Some("GPUActive"));
        assert_eq!(
            f.ratio,
            Some(0.4),
            "8 of the 20 GiB are attributed to processes"
        );
        assert!(
            f.message.contains("held by no process gpuledger sees"),
            "{}",
            f.message
        );
        let f = driver_held(&machine(8 * GIB, host(8 * GIB, 32 * GIB)), &t, false).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("no peer card mirrors it"),
            "{}",
            f.message
        );
        let f = driver_held(&machine(8 * GIB, host(8 * GIB, 32 * GIB)), &t, true).unwrap();
        assert!(
            f.message.contains("see the peer_mirror findings"),
            "{}",
            f.message
        );
    }

    #[test]
    fn processes_holding_more_than_the_counter_is_said_as_such_not_as_100_percent() {
        let t = Thresholds::default();
        let f = driver_held(&machine(10 * GIB, host(8 * GIB, 32 * GIB)), &t, false).unwrap();
        assert_eq!(f.ratio, Some(1.0));
        assert!(
            f.message.contains(
                "all of it is attributed to processes (pid 10 (python3) 10.0 GiB), which hold 10.0 GiB in all, 2.0 GiB more than the counter"
            ),
            "{}",
            f.message
        );
        assert!(!f.message.contains("100 %"), "{}", f.message);
    }

    #[test]
    fn little_driver_held_memory_or_a_residual_without_gpu_clients_is_no_finding() {
        let t = Thresholds::default();
        assert_eq!(
            driver_held(&machine(GIB, host(512 << 20, 32 * GIB)), &t, false),
            None
        );
        let residual = HostTotals {
            mem_total: Some(64 * GIB),
            unaccounted: Some(20 * GIB),
            ..HostTotals::default()
        };
        assert_eq!(driver_held(&machine(0, residual), &t, false), None);
    }

    #[test]
    fn low_available_memory_while_gpu_clients_hold_host_memory_is_pressure() {
        let t = Thresholds::default();
        let f = pressure(&machine(GIB, host(0, 2 * GIB)), &t).unwrap();
        assert_eq!(
            (f.kind, f.severity, f.bytes),
            (Kind::HostPressure, Severity::Critical, 2 * GIB)
        );
        let f = pressure(&machine(GIB, host(0, 5 * GIB)), &t).unwrap();
        assert_eq!(f.severity, Severity::Warning);
    }

    #[test]
    fn plenty_available_or_no_gpu_host_memory_is_no_pressure() {
        let t = Thresholds::default();
        assert_eq!(pressure(&machine(GIB, host(0, 32 * GIB)), &t), None);
        assert_eq!(pressure(&machine(0, host(0, 2 * GIB)), &t), None);
    }
}
