//! The default human output of a snapshot: host memory, devices, the per-process table, findings.

use super::safe_text::display_safe;
use super::text_table::{render_fit, severity_label, Align, Paint};
use super::wrap;
use crate::findings::group::{Group, Member};
use crate::findings::verdict::Verdict;
use crate::findings::{Finding, Severity};
use crate::ledger::engines::busiest_label;
use crate::ledger::{DriverHeld, HostTotals, Ledger, MemClass};
use crate::sources::drm_devices::DeviceInfo;
use crate::units::{human_bytes, human_opt};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Renders the whole snapshot report, without colour.
pub fn render_snapshot(ledger: &Ledger, findings: &[Finding]) -> String {
    render_snapshot_painted(ledger, findings, Paint::PLAIN)
}

/// Renders the whole snapshot report, severities coloured when `paint` says so.
pub fn render_snapshot_painted(ledger: &Ledger, findings: &[Finding], paint: Paint) -> String {
    render_snapshot_detail(ledger, findings, paint, false)
}

/// Renders the whole snapshot report; `each` lists every finding instead of folding many of one
/// kind and severity into a group line (`-v`).
pub fn render_snapshot_detail(
    ledger: &Ledger,
    findings: &[Finding],
    paint: Paint,
    each: bool,
) -> String {
    let width = paint.width;
    let mut out = verdict_line(ledger, findings, paint);
    out.push('\n');
    out.push_str(&host_section(ledger, width));
    out.push('\n');
    out.push_str(&device_section(ledger, width));
    out.push('\n');
    out.push_str(&process_section(ledger, width));
    out.push('\n');
    out.push_str(&jobs_section(ledger, width));
    out.push_str(&findings_section(findings, paint, each));
    out.push_str(&scan_notes(ledger, width));
    if ledger.devices.is_empty() && ledger.clients.is_empty() && ledger.root == "/" {
        out.push('\n');
        out.push_str(&wrap::paragraph("", "No GPU on this machine: host memory above is still exact. `gpuledger demo` shows what gpuledger finds on a machine with the GSD-13038 peer-mirror regression (simulated, in seconds).", width));
    }
    out
}

/// "CRITICAL: 3 findings (…); 64.0 GiB host, 25.9 GiB driver-held".
fn verdict_line(l: &Ledger, findings: &[Finding], paint: Paint) -> String {
    let v = Verdict::of(findings.iter().map(|f| (f.severity, f.kind.as_str())));
    let held = l
        .host
        .driver_held()
        .map_or("driver-held not known".into(), |d| {
            format!("{} driver-held", human_bytes(d.bytes))
        });
    let context = format!("{} host, {held}", human_opt(l.host.mem_total));
    super::verdict::line(&v, &context, paint)
}

fn host_section(l: &Ledger, width: usize) -> String {
    let h = &l.host;
    let mut out = format!(
        "Host memory\n  total {}   available {}\n",
        human_opt(h.mem_total),
        human_opt(h.mem_available),
    );
    out.push_str(&wrap::paragraph(
        "  ",
        &driver_held_line(h.driver_held()),
        width,
    ));
    out.push_str(&wrap::paragraph("  ", &counters_line(h), width));
    for f in &h.counter_faults {
        out.push_str(&wrap::paragraph("  ", &f.sentence(), width));
    }
    out
}

/// Driver-held host memory once, with its parts (docs/DESIGN.md's one definition); `top` shows the
/// same text.
pub(crate) fn driver_held_line(held: Option<DriverHeld>) -> String {
    let Some(e) = held else {
        return "driver-held - (no host memory counters)".into();
    };
    let mut s = format!(
        "driver-held {} ({} {} + pinned shmem {}",
        human_bytes(e.bytes),
        e.counter,
        human_bytes(e.counter_bytes),
        human_bytes(e.pinned_shmem)
    );
    if let Some(pool) = e.reclaimable_pool.filter(|p| *p > 0) {
        let _ = write!(
            s,
            "; TTM pool (GPUReclaim, reclaimable, not held) {}",
            human_bytes(pool)
        );
    }
    if let Some(other) = e.other_unaccounted {
        let _ = write!(s, "; other unaccounted {}", human_bytes(other));
    }
    s.push(')');
    s
}

/// The plain kernel counters, which overlap each other and driver-held: never to be added up.
fn counters_line(h: &HostTotals) -> String {
    let gpu = match (h.gpu_active_source.as_deref(), h.gpu_active) {
        (Some("GPUActive"), Some(v)) => format!(
            "GPUActive {}   GPUReclaim {}",
            human_bytes(v),
            human_opt(h.gpu_reclaim)
        ),
        (Some(_), Some(v)) => format!(
            "nr_gpu_active {}   nr_gpu_reclaim {}",
            human_bytes(v),
            human_opt(h.gpu_reclaim)
        ),
        _ => "GPUActive n/a (kernel has no GPU page accounting)".into(),
    };
    format!(
        "kernel counters: {gpu}   unaccounted residual {}",
        human_opt(h.unaccounted)
    )
}

fn device_section(l: &Ledger, width: usize) -> String {
    if l.devices.is_empty() {
        return "GPU devices\n  none: no GPU found under /sys/class/drm or /sys/class/accel, and no NVIDIA GPU through NVML\n"
            .into();
    }
    let rows: Vec<Vec<String>> = l
        .devices
        .iter()
        .map(|d| {
            let id =
                |v: &Option<String>| v.as_deref().map(|x| x.trim_start_matches("0x").to_string());
            vec![
                d.id.clone(),
                d.minors.join(" "),
                d.driver.clone().unwrap_or_else(|| "-".into()),
                match (id(&d.vendor), id(&d.device)) {
                    (Some(v), Some(p)) => format!("{v}:{p}"),
                    _ => "-".into(),
                },
                d.name.clone().unwrap_or_else(|| "unknown".into()),
                vram_cell(d, &l.dmem_capacity),
                match d.runtime_status.as_deref() {
                    Some("suspended") => "asleep (sampled slowly)".into(),
                    Some(s) => s.to_string(),
                    None => "-".into(),
                },
            ]
        })
        .collect();
    let headers = [
        ("DEVICE", Align::Left),
        ("MINORS", Align::Fold),
        ("DRIVER", Align::Left),
        ("PCI ID", Align::Fold),
        ("NAME", Align::Wrap),
        ("VRAM USED / TOTAL", Align::Right),
        ("POWER", Align::Fold),
    ];
    format!(
        "GPU devices\n{}{}",
        render_fit("  ", &headers, &rows, width),
        super::telemetry_table::section(l, width)
    )
}

/// `3.0 GiB / 12.0 GiB` as the driver, NVML or dmem states them; `-` for each unknown side, a
/// bare `-` when neither is known (never 0).
fn vram_cell(d: &DeviceInfo, dmem_capacity: &BTreeMap<String, u64>) -> String {
    match (d.local_used(dmem_capacity), d.local_capacity(dmem_capacity)) {
        (None, None) => "-".into(),
        (used, total) => format!("{} / {}", human_opt(used), human_opt(total)),
    }
}

fn process_section(l: &Ledger, width: usize) -> String {
    let holders: Vec<_> = l
        .processes
        .iter()
        .filter(|p| !p.usage.is_empty() || !p.shared_with_others.is_empty())
        .collect();
    if holders.is_empty() {
        return "GPU memory by process\n  no process holds GPU memory\n".into();
    }
    let mut rows = Vec::new();
    let mut sharers = String::new();
    let busy = holders.iter().any(|p| !p.engines.is_empty());
    for p in holders {
        if p.usage.is_empty() {
            let owners: Vec<String> = p
                .shared_with_others
                .iter()
                .map(|(id, o)| format!("client {id} of pid {o}"))
                .collect();
            let rank = p.rank.map(|r| format!("rank {r}, ")).unwrap_or_default();
            sharers.push_str(&format!(
                "  pid {} ({rank}{}) also holds {}: counted there\n",
                p.pid,
                p.comm,
                owners.join(", ")
            ));
            continue;
        }
        for (i, dev) in p.devices().into_iter().enumerate() {
            let shared: u64 = p
                .usage
                .iter()
                .filter(|u| u.device == dev)
                .filter_map(|u| u.shared)
                .sum();
            let first = i == 0;
            let cell = |v: String| if first { v } else { String::new() };
            let home = p.home_device.as_deref() == Some(dev);
            let pid = match p.nspid.last() {
                Some(inner) if p.nspid.len() > 1 => format!("{} (ns {inner})", p.pid),
                _ => p.pid.to_string(),
            };
            let mut row = vec![
                cell(pid),
                cell(p.rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into())),
                cell(p.comm.clone()),
                format!("{dev}{}", if home { " *" } else { "" }),
                human_bytes(p.resident(dev, MemClass::Device)),
                human_bytes(p.resident(dev, MemClass::Host)),
                human_bytes(shared),
            ];
            if busy {
                row.push(busiest_label(&p.engines, Some(dev)));
            }
            rows.push(row);
        }
    }
    let mut headers = vec![
        ("PID", Align::Right),
        ("RANK", Align::Right),
        ("COMM", Align::Left),
        ("DEVICE (* home)", Align::Wrap),
        ("LOCAL", Align::Right),
        ("HOST", Align::Right),
        ("SHARED", Align::Right),
    ];
    let mut legend = "resident; LOCAL = VRAM/local, HOST = GTT/system".to_string();
    if busy {
        headers.push(("BUSY", Align::Right));
        legend.push_str("; BUSY = busiest engine class since the last sample");
    }
    format!(
        "GPU memory by process ({legend})\n{}{sharers}",
        render_fit("  ", &headers, &rows, width)
    )
}

/// Cgroups of the GPU processes, when any is a job (pod, Slurm) or has a memory limit or dmem.
fn jobs_section(l: &Ledger, width: usize) -> String {
    let interesting = |c: &crate::sources::cgroup::CgroupInfo| {
        c.memory_max.is_some()
            || !c.dmem_current.is_empty()
            || l.processes.iter().any(|p| {
                p.cgroup.as_deref() == Some(&c.path)
                    && (p.labels.pod.is_some() || p.labels.job.is_some())
            })
    };
    let rows: Vec<Vec<String>> = l
        .cgroups
        .iter()
        .filter(|c| interesting(c))
        .map(|c| {
            let label = l
                .processes
                .iter()
                .find(|p| p.cgroup.as_deref() == Some(&c.path))
                .map(|p| match (&p.labels.pod, &p.labels.job) {
                    (Some(pod), _) => format!("pod {pod}"),
                    (None, Some(j)) => format!("slurm job {j}"),
                    _ => "-".into(),
                })
                .unwrap_or_else(|| "-".into());
            let dmem: Vec<String> = c
                .dmem_current
                .iter()
                .map(|(r, v)| {
                    let max = c
                        .dmem_max
                        .get(r)
                        .map(|m| human_bytes(*m))
                        .unwrap_or_else(|| "max".into());
                    format!("{r} {} / {max}", human_bytes(*v))
                })
                .collect();
            vec![
                label,
                human_opt(c.memory_current),
                c.memory_max
                    .map(human_bytes)
                    .unwrap_or_else(|| "max".into()),
                human_bytes(l.cgroup_host_class(&c.path)),
                if dmem.is_empty() {
                    "-".into()
                } else {
                    dmem.join(", ")
                },
                c.path.clone(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let headers = [
        ("JOB", Align::Wrap),
        ("MEMORY", Align::Right),
        ("LIMIT", Align::Right),
        ("GPU HOST-CLASS", Align::Right),
        ("DMEM (current / max)", Align::Fold),
        ("CGROUP", Align::Fold),
    ];
    format!(
        "Jobs (cgroups)\n{}\n",
        render_fit("  ", &headers, &rows, width)
    )
}

fn findings_section(findings: &[Finding], paint: Paint, each: bool) -> String {
    if findings.is_empty() {
        return "Findings\n  none\n".into();
    }
    let mut s = String::from("Findings\n");
    for g in crate::findings::group::groups(findings) {
        if g.folded() && !each {
            let text = format!("{}: {}", g.kind.as_str(), group_text(&g, "peers"));
            s.push_str(&finding_row(paint, g.severity, &text));
            continue;
        }
        for f in g.findings {
            let text = format!("{}: {}", f.kind.as_str(), f.message);
            s.push_str(&finding_row(paint, f.severity, &text));
        }
    }
    s
}

/// Columns before a finding's text: two spaces, the severity (8), two spaces.
const FINDING_HANG: usize = 12;

/// `  CRITICAL  kind: message`: `text` (the kind and its message) wrapped under the kind.
pub(crate) fn finding_row(paint: Paint, severity: Severity, text: &str) -> String {
    let first = format!("  {}  ", severity_label(paint, severity));
    wrap::hanging(
        &first,
        FINDING_HANG,
        FINDING_HANG,
        &display_safe(text),
        paint.width,
    )
}

/// A group's one line (the table, `show`, `report`): "5 findings, 64 processes × 63 peers, 18.2 GiB each (median), 72 TiB in
/// all; -v lists each"; `others` names what the second count counts.
pub fn group_text<T: Member>(g: &Group<T>, others: &str) -> String {
    let (pids, peers) = g.shape();
    let (median, total) = g.bytes();
    let shape = match (pids, peers) {
        (0, _) => String::new(),
        (p, 0) => format!(", {p} processes"),
        (p, q) => format!(", {p} processes × {q} {others}"),
    };
    format!(
        "{} findings{shape}, {} each (median), {} in all; -v lists each",
        g.findings.len(),
        human_bytes(median),
        human_bytes(total)
    )
}

/// Issues named one per line in the text output; the rest are counted.
const SHOWN_ISSUES: usize = 10;

fn scan_notes(l: &Ledger, width: usize) -> String {
    let st = &l.stats;
    let mut s = String::new();
    if st.unreadable > 0 {
        s.push('\n');
        s.push_str(&wrap::paragraph("", &format!(
            "Note: {} of {} processes could not be read (permission denied); run as root to see all.",
            st.unreadable, st.processes
        ), width));
    }
    if st.issues_total > 0 {
        s.push('\n');
        s.push_str(&wrap::paragraph(
            "",
            &format!(
                "Note: {} file(s) under the root could not be used and were skipped:",
                st.issues_total
            ),
            width,
        ));
        for i in st.issues.iter().take(SHOWN_ISSUES) {
            let text = format!("{}: {}", display_safe(&i.path), display_safe(&i.detail));
            s.push_str(&wrap::paragraph("  ", &text, width));
        }
        let more = (st.issues_total as usize).saturating_sub(st.issues.len().min(SHOWN_ISSUES));
        if more > 0 {
            let _ = writeln!(
                s,
                "  … and {more} more (--json lists the first {} under scan.issues)",
                st.issues.len()
            );
        }
    }
    if st.malformed_lines > 0 {
        let _ = writeln!(
            s,
            "\nNote: {} malformed lines were skipped.",
            st.malformed_lines
        );
    }
    s
}
