//! `show`: the summary of a recording, as text or JSON.

use super::safe_text::display_safe;
use super::text_table::{render, Align};
use crate::recording::Recording;
use crate::timeline::{peaks, TimelineFinding};
use crate::units::{human_bytes, human_opt};
use serde::Serialize;
use std::fmt::Write;

#[derive(Serialize)]
struct PeakJson {
    pid: u32,
    rank: Option<u32>,
    device: String,
    home: bool,
    device_local_peak: u64,
    host_peak: u64,
}

#[derive(Serialize)]
struct ShowJson<'a> {
    schema: &'static str,
    command: Vec<String>,
    duration_s: f64,
    samples: u64,
    exit_code: Option<i64>,
    signal: Option<i64>,
    peaks: Vec<PeakJson>,
    mem_available_low: Option<u64>,
    driver_held_peak: Option<u64>,
    gpu_active_peak: Option<u64>,
    unaccounted_peak: Option<u64>,
    findings: &'a [TimelineFinding],
    kernel_log: Vec<KernelLine<'a>>,
}

#[derive(Serialize)]
struct KernelLine<'a> {
    t_s: f64,
    kind: &'a str,
    message: &'a str,
}

/// JSON summary (`gpuledger.show/1`).
pub fn render_json(rec: &Recording, findings: &[TimelineFinding]) -> String {
    let num = |k: &str| rec.meta.get(k).and_then(|v| v.parse().ok());
    let doc = ShowJson {
        schema: "gpuledger.show/1",
        command: rec.command(),
        duration_s: rec.duration_s(),
        samples: rec.host.samples,
        exit_code: num("exit_code"),
        signal: num("signal"),
        peaks: peaks(rec)
            .into_iter()
            .map(|p| PeakJson {
                pid: p.pid,
                rank: p.rank,
                device: p.device,
                home: p.home,
                device_local_peak: p.device_local,
                host_peak: p.host,
            })
            .collect(),
        mem_available_low: rec.host.mem_available_low,
        driver_held_peak: rec.host.driver_held_peak,
        gpu_active_peak: rec.host.gpu_active_peak,
        unaccounted_peak: rec.host.unaccounted_peak,
        findings,
        kernel_log: rec
            .kernel
            .iter()
            .map(|(i, kind, message)| KernelLine {
                t_s: rec.t_s(*i),
                kind,
                message,
            })
            .collect(),
    };
    serde_json::to_string_pretty(&doc).expect("plain data") + "\n"
}

/// Text summary.
pub fn render_text(name: &str, rec: &Recording, findings: &[TimelineFinding]) -> String {
    let mut s = format!("Recording {name}\n");
    let _ = writeln!(s, "  command   {}", display_safe(&rec.command().join(" ")));
    let end = match (rec.meta.get("exit_code"), rec.meta.get("signal")) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "still running or recorder killed".into(),
    };
    let _ = writeln!(
        s,
        "  duration  {:.1} s, {} samples every {} ms; job end: {end}",
        rec.duration_s(),
        rec.host.samples,
        rec.meta
            .get("interval_ms")
            .map(String::as_str)
            .unwrap_or("?")
    );
    if let Some(note) = rec.meta.get("note") {
        let _ = writeln!(s, "  note      {}", display_safe(note));
    }
    let ranks: Vec<String> = rec
        .processes
        .iter()
        .filter_map(|p| p.rank.map(|r| format!("{r} (pid {})", p.pid)))
        .collect();
    if !ranks.is_empty() {
        let _ = writeln!(s, "  ranks     {}", ranks.join(", "));
    }
    let rows: Vec<Vec<String>> = peaks(rec)
        .into_iter()
        .map(|p| {
            vec![
                p.rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                p.pid.to_string(),
                format!("{}{}", p.device, if p.home { " *" } else { "" }),
                human_bytes(p.device_local),
                human_bytes(p.host),
            ]
        })
        .collect();
    s.push_str("\nPeaks by process and device (resident)\n");
    if rows.is_empty() {
        s.push_str("  no GPU memory was recorded\n");
    } else {
        let h = [
            ("RANK", Align::Right),
            ("PID", Align::Right),
            ("DEVICE (* home)", Align::Left),
            ("LOCAL", Align::Right),
            ("HOST", Align::Right),
        ];
        s.push_str(&render("  ", &h, &rows));
    }
    let (low, gpu, unacc) = (
        rec.host.mem_available_low,
        rec.host.gpu_active_peak,
        rec.host.unaccounted_peak,
    );
    let _ = writeln!(
        s,
        "\nHost\n  MemAvailable low {}   GPUActive peak {}   unaccounted peak {}",
        human_opt(low),
        human_opt(gpu),
        human_opt(unacc)
    );
    if !rec.kernel.is_empty() {
        let _ = writeln!(
            s,
            "\nKernel log ({} page-allocation failures, {} OOM kills, {} driver lines)",
            rec.kernel_count("page_allocation_failure"),
            rec.kernel_count("oom_kill"),
            rec.kernel_count("driver")
        );
        for (i, kind, msg) in rec.kernel.iter().take(20) {
            let _ = writeln!(
                s,
                "  {:>7.1} s  {:<23}  {}",
                rec.t_s(*i),
                display_safe(kind),
                display_safe(msg)
            );
        }
    }
    s.push_str("\nTimeline findings\n");
    if findings.is_empty() {
        s.push_str("  none\n");
    }
    for f in findings {
        let _ = writeln!(
            s,
            "  {:<8}  {} at {:.1} s: {}",
            f.severity.as_str().to_uppercase(),
            f.kind.as_str(),
            f.t_s,
            display_safe(&f.message)
        );
    }
    s
}
