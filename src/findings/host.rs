//! Host-side findings: `driver_held_host` and `host_pressure`.

use super::{percent, Finding, Kind, Severity, Thresholds};
use crate::ledger::{HeldCounter, Ledger, MemClass};
use crate::units::human_bytes;

pub(super) fn driver_held(ledger: &Ledger, t: &Thresholds) -> Option<Finding> {
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
    } else {
        "see the peer_mirror findings for whose memory it mirrors".to_string()
    };
    Some(Finding {
        kind: Kind::DriverHeldHost,
        severity,
        message: format!(
            "{what}; {:.0} % of it ({}) is attributed to processes{}: {advice}; see --explain driver_held_host",
            explained * 100.0,
            human_bytes(attributed),
            top_holders(ledger)
        ),
        pid: None,
        rank: None,
        device: None,
        peer: None,
        bytes: held,
        ratio: Some(explained),
        backing: None,
        source: Some(e.counter.as_str().to_string()),
        issue: None,
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
    Some(Finding {
        kind: Kind::HostPressure,
        severity,
        message: format!(
            "MemAvailable is {} of {} ({:.0} %) while GPU clients hold {} of host-class memory: the kernel will soon fail allocations; stop the job or run it under `gpuledger guard`; see --explain host_pressure",
            human_bytes(avail),
            human_bytes(total),
            percent(avail, total),
            human_bytes(gpu_host)
        ),
        pid: None,
        rank: None,
        device: None,
        peer: None,
        bytes: avail,
        ratio: Some(avail as f64 / total.max(1) as f64),
        backing: None,
        source: Some("MemAvailable".into()),
        issue: None,
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
