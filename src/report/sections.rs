//! The report's sections.

use super::escape::{code, code_cell, fenced, text, visible};
use super::related;
use super::steps;
use super::{ReportInput, Template};
use crate::findings::group::{groups, Member};
use crate::findings::Kind;
use crate::ledger::{classify, Ledger, UsageSource};
use crate::outputs::table::group_text;
use crate::recording::Recording;
use crate::timeline::{diff, RunSummary};
use crate::units::{human_bytes, human_opt};
use std::fmt::Write;

const NF: &str = "not found";

fn or_nf(v: Option<&str>) -> String {
    v.map(text).unwrap_or_else(|| NF.into())
}

fn title(input: &ReportInput) -> String {
    let f = input.findings;
    let mirror = f.iter().find(|x| x.kind == Kind::PeerMirror);
    let gpus: Vec<String> = input
        .ledger
        .devices
        .iter()
        .filter_map(|d| d.name.clone())
        .collect();
    let gpu = match (gpus.first(), gpus.len()) {
        (Some(n), c) if c > 1 => format!("{c}× {n}"),
        (Some(n), _) => n.clone(),
        _ => "GPU".into(),
    };
    match mirror {
        Some(m) if m.backing == Some(crate::findings::Backing::Pinned) => format!(
            "{gpu}: multi-GPU job pins a host-RAM mirror of each rank's device memory on the peer device ({} per rank, {})",
            human_bytes(m.bytes),
            m.source.as_deref().unwrap_or("host counters")
        ),
        Some(m) => format!("{gpu}: each rank's device memory is registered as GTT on the peer device ({} per rank)", human_bytes(m.bytes)),
        None => match f.first() {
            Some(x) => format!("{gpu}: {}", x.kind.as_str().replace('_', " ")),
            None => format!("{gpu}: GPU memory report"),
        },
    }
}

fn environment(input: &ReportInput) -> String {
    let s = input.system;
    let h = &input.ledger.host;
    let mut t = String::from("| component | version |\n|---|---|\n");
    let mut row = |k: &str, v: String| {
        let _ = writeln!(t, "| {k} | {v} |");
    };
    row("kernel", or_nf(s.kernel.as_deref()));
    row("distribution", or_nf(s.distro.as_deref()));
    let drivers: Vec<String> = input
        .ledger
        .devices
        .iter()
        .filter_map(|d| d.driver.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for d in &drivers {
        let v = s
            .driver_versions
            .get(d)
            .map(|v| v.as_str())
            .unwrap_or("in-tree (no /sys/module version)");
        row(&format!("kernel driver {}", text(d)), text(v));
    }
    if drivers.is_empty() {
        row("kernel driver", NF.into());
    }
    row(
        "GPU kernel modules loaded",
        or_nf(super::facts::modules(input).as_deref()),
    );
    row("host RAM", human_opt(h.mem_total));
    row(
        "GPU page accounting",
        match &h.gpu_active_source {
            Some(src) => format!("{} (kernel counts pinned GPU pages)", text(src)),
            None => "none (GPUActive absent: pinned pages show only as unaccounted memory)".into(),
        },
    );
    if s.packages.is_empty() {
        row("GPU runtime packages", NF.into());
    }
    for (p, v) in &s.packages {
        let from = s.packages_source.as_deref().unwrap_or("?");
        row(&text(p), format!("{} ({})", text(v), text(from)));
    }
    row("NVIDIA driver", or_nf(s.nvidia.as_deref()));
    row("ROCm", or_nf(s.rocm.as_deref()));
    let python = super::facts::python(input);
    let nvidia = input
        .ledger
        .devices
        .iter()
        .any(|d| d.driver.as_deref() == Some("nvidia"));
    let cuda = super::facts::cuda_runtime(&python);
    if nvidia || cuda.is_some() {
        row("CUDA runtime (the job's)", or_nf(cuda.as_deref()));
        row(
            "CUDA toolkit",
            or_nf(super::facts::cuda_toolkit(input).as_deref()),
        );
    }
    if nvidia {
        row(
            "NVIDIA persistence mode",
            super::facts::nvidia_mode(input.ledger, |t| t.persistence),
        );
        row(
            "MIG mode",
            super::facts::nvidia_mode(input.ledger, |t| t.mig),
        );
    }
    for (p, v) in &python {
        row(&format!("python: {}", text(p)), text(v));
    }
    if python.is_empty() {
        row(
            "python frameworks (torch, jax, cupy, …)",
            format!("{NF} in the job's environment"),
        );
    }
    row("gpuledger", env!("CARGO_PKG_VERSION").into());
    t
}

fn gpus(l: &Ledger) -> String {
    if l.devices.is_empty() {
        return format!("{NF}: no GPU device in /sys/class/drm or NVML\n");
    }
    let mut t = String::from(
        "| PCI slot | vendor:device | name | driver | minors |\n|---|---|---|---|---|\n",
    );
    for d in &l.devices {
        let _ = writeln!(
            t,
            "| {} | {}:{} | {} | {} | {} |",
            text(&d.id),
            or_nf(d.vendor.as_deref()),
            or_nf(d.device.as_deref()),
            or_nf(d.name.as_deref()),
            or_nf(d.driver.as_deref()),
            if d.minors.is_empty() {
                "-".to_string()
            } else {
                text(&d.minors.join(", "))
            }
        );
    }
    t
}

fn dri(input: &ReportInput) -> String {
    let v = |s: &str| visible(s, false).into_owned();
    let mut t = String::new();
    for d in &input.ledger.devices {
        for m in &d.minors {
            let _ = writeln!(t, "/dev/dri/{} -> {}", v(m), v(&d.id));
        }
    }
    if input.system.by_path.is_empty() {
        let _ = writeln!(t, "/dev/dri/by-path: {NF}");
    }
    for (n, target) in &input.system.by_path {
        let _ = writeln!(t, "/dev/dri/by-path/{} -> {}", v(n), v(target));
    }
    fenced(&t)
}

fn per_fd(l: &Ledger) -> String {
    let v = |s: &str| visible(s, false).into_owned();
    let mut t = String::new();
    for p in l.processes.iter().filter(|p| !p.usage.is_empty()) {
        let home = v(p.home_device.as_deref().unwrap_or("-"));
        let who = match p.rank {
            Some(r) => format!("pid {} (rank {r}, {}, home {home})", p.pid, v(&p.comm)),
            None => format!("pid {} ({}, home {home})", p.pid, v(&p.comm)),
        };
        let _ = writeln!(t, "{who}");
        for c in l.clients.iter().filter(|c| c.owner == p.pid) {
            let fds: Vec<String> = c
                .holders
                .iter()
                .filter(|h| h.0 == p.pid)
                .map(|h| format!("fd{}", h.1))
                .collect();
            let regions: Vec<String> = c
                .regions
                .iter()
                .filter(|(_, r)| r.resident_bytes().unwrap_or(0) > 0)
                .map(|(name, r)| {
                    format!(
                        "drm-resident-{}: {} KiB",
                        v(name),
                        r.resident_bytes().unwrap_or(0) / 1024
                    )
                })
                .collect();
            let _ = writeln!(
                t,
                "  {} {} ({}): {}",
                fds.join(","),
                v(&c.path),
                v(&c.device),
                if regions.is_empty() {
                    "nothing resident".into()
                } else {
                    regions.join("  ")
                }
            );
        }
        // DRM fdinfo rows are the clients above; the others come from their own interfaces.
        for u in p
            .usage
            .iter()
            .filter(|u| u.source != UsageSource::DrmFdinfo)
        {
            let _ = writeln!(
                t,
                "  {} {} on {}: {}",
                u.source.as_str(),
                v(&u.region),
                v(&u.device),
                human_opt(u.resident)
            );
        }
    }
    fenced(&t)
}

fn findings(input: &ReportInput) -> String {
    if input.findings.is_empty() {
        return match (input.machine_note.is_some(), input.recordings.is_empty()) {
            (true, _) => "No finding was recorded at any sample of the recordings; their timeline findings are under \"Over time\" below.\n".into(),
            (false, false) => "No findings in the snapshot of this machine; the recordings' are under \"Over time\" below.\n".into(),
            (false, true) => "No findings in the snapshot.\n".into(),
        };
    }
    let mut t = String::new();
    for g in groups(input.findings) {
        if g.folded() && !input.each {
            let _ = writeln!(
                t,
                "- **{}** `{}`: {}",
                g.severity.as_str(),
                g.kind.as_str(),
                text(&group_text(&g, "peers"))
            );
            continue;
        }
        for f in g.findings {
            let _ = writeln!(
                t,
                "- **{}** `{}`: {}",
                f.severity.as_str(),
                f.kind.as_str(),
                text(&f.message)
            );
        }
    }
    t
}

fn recordings(input: &ReportInput) -> String {
    let mut t = String::new();
    let summaries: Vec<RunSummary> = input
        .recordings
        .iter()
        .map(|(_, rec)| RunSummary::of(rec))
        .collect();
    for ((name, rec), summary) in input.recordings.iter().zip(&summaries) {
        t.push_str(&recording(name, rec, summary, input.each));
    }
    if let ([(a_name, _), (b_name, _)], [a, b]) = (input.recordings, summaries.as_slice()) {
        t.push_str(&bad_vs_good(a_name, b_name, &diff::diff(a, b)));
    }
    t
}

/// One recording's heading, peaks and timeline findings (grouped unless `each`).
fn recording(name: &str, rec: &Recording, s: &RunSummary, each: bool) -> String {
    let mut t = format!(
        "#### Recording {}: {}, {:.1} s, {}; job end: {}\n\n",
        code(name),
        steps::what_ran(rec),
        s.duration_s,
        crate::units::count(s.samples as usize, "sample"),
        text(&s.job_end.to_string())
    );
    t.push_str(
        "| rank | pid | device | peak device-local | peak host-class |\n|---|---|---|---|---|\n",
    );
    for p in &s.peaks {
        let _ = writeln!(
            t,
            "| {} | {} | {}{} | {} | {} |",
            p.rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            p.pid,
            text(&p.device),
            if p.home { " (home)" } else { "" },
            human_bytes(p.device_local),
            human_bytes(p.host)
        );
    }
    if !s.timeline.is_empty() {
        t.push('\n');
    }
    for g in groups(&s.timeline) {
        if g.folded() && !each {
            let _ = writeln!(
                t,
                "- **{}** `{}`: {}",
                g.severity.as_str(),
                g.kind.as_str(),
                text(&group_text(&g, "devices"))
            );
            continue;
        }
        for f in g.findings {
            let _ = writeln!(
                t,
                "- **{}** `{}` at {:.1} s: {}",
                f.severity().as_str(),
                f.finding.kind.as_str(),
                f.t_s,
                text(&f.finding.message)
            );
        }
    }
    t.push('\n');
    t.push_str(&super::evidence::section(&s.evidence));
    t.push_str(&super::calls::section(s));
    t
}

/// The diff table, its warning when the runs differ, and its verdict.
fn bad_vs_good(a_name: &str, b_name: &str, d: &diff::Diff) -> String {
    let mut t = format!(
        "#### Bad vs good\n\n| | A = {} | B = {} |\n|---|---|---|\n",
        code_cell(a_name),
        code_cell(b_name)
    );
    let show = |v: &diff::Value| match v {
        diff::Value::Bytes(b) => human_opt(*b),
        diff::Value::Seconds(s) => format!("{s:.1} s"),
        diff::Value::Text(x) => text(x),
        rate @ diff::Value::Rate(_) => text(&rate.show()),
    };
    for r in &d.rows {
        let _ = writeln!(t, "| {} | {} | {} |", text(&r.what), show(&r.a), show(&r.b));
    }
    t.push_str(&super::evidence::throughput_lines(d));
    t.push_str(&super::calls::diff_lines(d));
    for line in d.warning.iter().chain(&d.verdict) {
        let _ = writeln!(t, "\n{}\n", text(line));
    }
    t
}

/// The allow-listed environment of the snapshot's GPU processes, else of the recorded job's.
fn job_env(input: &ReportInput) -> String {
    let recorded = input
        .recordings
        .iter()
        .flat_map(|(_, r)| r.processes.iter())
        .find(|p| !p.env.is_empty())
        .map(|p| &p.env);
    let env = input
        .ledger
        .processes
        .iter()
        .find(|p| !p.env.is_empty())
        .map(|p| &p.env)
        .or(recorded);
    match env {
        None => format!("{NF} (no allow-listed variables set in the GPU processes)\n"),
        Some(e) => {
            let mut body = String::new();
            for (k, v) in e
                .iter()
                .filter(|(k, v)| !super::steps::set_by_tracing(k, v))
            {
                let v = crate::redact::env_value(k, v);
                let _ = writeln!(body, "{}={}", visible(k, false), visible(&v, false));
            }
            let mut t = fenced(&body);
            if e.contains_key("NEOReadDebugKeys") {
                t.push_str(
                    "\nNEO debug keys are set: they are for diagnosis only, not for production.\n",
                );
            }
            t
        }
    }
}

fn expected(input: &ReportInput) -> &'static str {
    if input.findings.iter().any(|f| f.kind == Kind::PeerMirror) {
        "Peer registrations of device allocations should not pin physical host pages proportional to each rank's VRAM working set; host RAM use should not grow with device allocations."
    } else {
        "GPU memory and driver-held host memory in line with what the job allocates."
    }
}

/// The host counters and per-fd accounting of the snapshot; for a recorded machine, where to find
/// them instead (the recording keeps them over time, not as one snapshot).
fn observed_now(input: &ReportInput) -> String {
    if input.machine_note.is_some() {
        return "The recording keeps the host counters and each rank's memory over time: see \"Over time\" below.\n".into();
    }
    let l = input.ledger;
    let h = &l.host;
    let mut out = format!(
        "Host: MemTotal {}, MemAvailable {}, GPUActive {}, unaccounted {}.\n\n",
        human_opt(h.mem_total),
        human_opt(h.mem_available),
        human_opt(h.gpu_active),
        human_opt(h.unaccounted)
    );
    out.push_str("Per-fd accounting (each DRM client once, by drm-client-id):\n\n");
    if l.processes.iter().all(|p| p.usage.is_empty()) {
        out.push_str("No process holds GPU memory in this snapshot.\n");
    } else {
        out.push_str(&per_fd(l));
    }
    out
}

/// Kernel records quoted under "System logs" at most.
const QUOTED_KERNEL: usize = 50;

/// "System logs": the recordings' kernel lines, else the evidence of the kernel log read now
/// (whose findings are listed above), else why it could not be read.
fn system_logs(input: &ReportInput) -> String {
    let lines: Vec<&(usize, String, String)> = input
        .recordings
        .iter()
        .flat_map(|(_, r)| r.kernel.iter())
        .collect();
    let mut body = String::new();
    if lines.is_empty() && input.machine_note.is_some() {
        return recorded_log(input.recordings);
    }
    let mut out = if !lines.is_empty() {
        for (_, kind, msg) in lines.iter().take(QUOTED_KERNEL) {
            let _ = writeln!(body, "[{}] {}", visible(kind, false), visible(msg, false));
        }
        String::from("Kernel lines during the recordings (page-allocation failures, OOM killer, GPU drivers):\n\n")
    } else {
        let log = input.kernel_log;
        match (log.origin, &log.unreadable) {
            (_, Some(why)) => return format!("Kernel log not read: {}.\n", text(why)),
            (None, None) => return "No kernel log captured.\n".into(),
            (Some(_), None) if log.records.is_empty() => {
                return "No page-allocation failure, OOM kill or GPU driver line in the kernel log.\n".into()
            }
            (Some(origin), None) => {
                for r in log.records.iter().take(QUOTED_KERNEL) {
                    let _ = writeln!(
                        body,
                        "[{:>12.6}] {}",
                        r.usec as f64 / 1e6,
                        visible(&r.message, false)
                    );
                }
                format!(
                    "From the {}, the first {} of {} lines on page allocation, the OOM killer and GPU drivers (the kernel findings above rest on the failures, kills and driver errors among them):\n\n",
                    origin.as_str(),
                    log.records.len().min(QUOTED_KERNEL),
                    log.records.len()
                )
            }
        }
    };
    out.push_str(&fenced(&body));
    out
}

/// What the recordings' kernel logs said when they kept no line: which log each read
/// (`meta.kernel_log`), or that none was captured.
fn recorded_log(recordings: &[(String, Recording)]) -> String {
    let read: Vec<&str> = recordings
        .iter()
        .filter_map(|(_, r)| r.meta.get("kernel_log").map(String::as_str))
        .filter(|s| *s != "none")
        .collect();
    if read.is_empty() {
        return "No kernel log captured: the recordings kept no kernel line and do not say that they read a log.\n".into();
    }
    format!(
        "No page-allocation failure, OOM kill or GPU driver line in the kernel log the recordings read ({}).\n",
        text(&read.join(", "))
    )
}

/// All sections in template order.
pub fn render(input: &ReportInput) -> String {
    let l = input.ledger;
    let s = input.system;
    let mut out = format!("# {}\n\n", text(&title(input)));
    out.push_str("_Generated by gpuledger from the machine's /proc and /sys (and recordings where given); values it could not find say \"not found\"._\n\n");
    if let Some(note) = &input.machine_note {
        let _ = writeln!(out, "{}\n", text(note));
    }
    if input.template == Template::IntelComputeRuntime {
        out.push_str("## Pre-submission checklist\n\n");
        let _ = writeln!(
            out,
            "- [ ] I tested with the latest released driver (installed here: {})",
            or_nf(super::facts::installed_driver(s).as_deref())
        );
        let _ = writeln!(
            out,
            "- [ ] I searched for similar issues ({})\n",
            related::ids(input.related)
        );
        out.push_str("## GPU hardware\n\n");
        out.push_str(&gpus(l));
        out.push_str("\n## DRI devices information\n\n");
        out.push_str(&dri(input));
        out.push_str("\n## Detailed GPU information\n\n");
        if s.lspci.is_empty() {
            out.push_str("`lspci -vvv -k -s <slot>`: not found (lspci absent, or not the live machine); the sysfs view:\n\n");
            out.push_str(&gpus(l));
        }
        for (slot, lspci) in &s.lspci {
            let _ = writeln!(
                out,
                "{}:\n\n{}",
                code(&format!("lspci -vvv -k -s {slot}")),
                fenced(&visible(lspci, true))
            );
        }
        out.push_str("\n## Driver version and installation\n\n");
        out.push_str(&environment(input));
        out.push_str("\nInstallation method: not found (fill in: repository, packages, custom kernel parameters).\n\n");
        let _ = writeln!(out, "## Linux distribution and kernel\n\n- distribution: {}\n- kernel: {}\n- kernel command line: {}\n- GPU modules: {}\n", or_nf(s.distro.as_deref()), or_nf(s.kernel.as_deref()), or_nf(s.cmdline.as_deref()), or_nf(super::facts::modules(input).as_deref()));
    } else {
        out.push_str("## Environment\n\n");
        out.push_str(&environment(input));
        out.push_str("\n### GPUs\n\n");
        out.push_str(&gpus(l));
        out.push('\n');
    }
    out.push_str("## Job environment (allow-listed)\n\n");
    out.push_str(&job_env(input));
    out.push_str("\n## Observed behaviour\n\n");
    out.push_str(&observed_now(input));
    out.push_str("\nFindings:\n\n");
    out.push_str(&findings(input));
    if !input.recordings.is_empty() {
        out.push_str("\n### Over time\n\n");
        out.push_str(&recordings(input));
    }
    for n in input.nodes {
        out.push_str("\n### Nodes of a multi-node run (the recording above is its worst node)\n\n");
        out.push_str(&fenced(&visible(n, true)));
    }
    out.push_str("\n## Possibly related\n\n");
    out.push_str(&related::related(input.related));
    let _ = writeln!(out, "\n## Expected behaviour\n\n{}\n", expected(input));
    out.push_str("## Steps to reproduce\n\n");
    out.push_str(&steps::steps(input.recordings, l));
    if input.template == Template::IntelComputeRuntime {
        out.push_str("\n## Reproduction rate\n\nnot found (gpuledger saw one run; fill in)\n");
        out.push_str("\n## Regression\n\n");
        if let [(_, a), (_, b)] = input.recordings {
            out.push_str(&super::facts::regression(a, b));
        } else {
            out.push_str("not found (record a known-good and a bad run and pass both to `gpuledger report A B`)\n");
        }
        out.push_str("\n## System logs\n\n");
        out.push_str(&system_logs(input));
    }
    // The machine's regions, and the memory classes the recordings' series hold.
    let classes: Vec<&str> = l
        .processes
        .iter()
        .flat_map(|p| p.usage.iter())
        .map(|u| classify(&u.region).as_str())
        .chain(
            input
                .recordings
                .iter()
                .flat_map(|(_, r)| r.series.iter().map(|s| s.class.as_str())),
        )
        .collect();
    let _ = writeln!(out, "\n---\nRegions seen: {}. Device-local = VRAM/local memory; host-class = GTT/system memory the GPU maps.", if classes.is_empty() { "none".into() } else { let mut c = classes.clone(); c.sort(); c.dedup(); c.join(", ") });
    out
}
