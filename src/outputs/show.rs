//! `show`: the summary of a recording, as text or JSON. Everything shown comes from one
//! [`RunSummary`]; nothing is recomputed here.

use super::safe_text::{display_safe, safe};
use super::text_table::{render, severity_label, Align, Paint};
use crate::ledger::DriverHeld;
use crate::recording::RecordedFinding;
use crate::timeline::evidence::approx;
use crate::timeline::{EvidenceSummary, JobEnd, KernelLine, RunSummary, TimelineFinding};
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
    command: &'a [String],
    duration_s: f64,
    samples: u64,
    exit_code: Option<i64>,
    signal: Option<i64>,
    job_end: JobEnd,
    job_end_text: String,
    peaks: Vec<PeakJson>,
    mem_available_low: Option<u64>,
    driver_held_peak: Option<u64>,
    driver_held_parts: Option<DriverHeld>,
    gpu_active_peak: Option<u64>,
    unaccounted_peak: Option<u64>,
    findings: &'a [TimelineFinding],
    recorded_findings: &'a [RecordedFinding],
    kernel_log: &'a [KernelLine],
    evidence: &'a EvidenceSummary,
    labels: &'a std::collections::BTreeMap<String, String>,
}

/// JSON summary (`gpuledger.show/1`; `job_end`, `driver_held_parts`, `recorded_findings` (each
/// finding's severity at its peak and its worst over time), `evidence` and the followed job's
/// `labels` were added without breaking it).
pub fn render_json(s: &RunSummary) -> String {
    let (exit_code, signal) = match s.job_end {
        JobEnd::Exited { code, .. } => (Some(code), None),
        JobEnd::Killed { signal, .. } => (None, Some(signal)),
        _ => (None, None),
    };
    let doc = ShowJson {
        schema: "gpuledger.show/1",
        command: &s.command,
        duration_s: s.duration_s,
        samples: s.samples,
        exit_code,
        signal,
        job_end: s.job_end,
        job_end_text: s.job_end.to_string(),
        peaks: s
            .peaks
            .iter()
            .map(|p| PeakJson {
                pid: p.pid,
                rank: p.rank,
                device: p.device.clone(),
                home: p.home,
                device_local_peak: p.device_local,
                host_peak: p.host,
            })
            .collect(),
        mem_available_low: s.mem_available_low,
        driver_held_peak: s.driver_held_bytes(),
        driver_held_parts: s.driver_held_peak,
        gpu_active_peak: s.gpu_active_peak,
        unaccounted_peak: s.unaccounted_peak,
        findings: &s.timeline,
        recorded_findings: &s.findings,
        kernel_log: &s.kernel,
        evidence: &s.evidence,
        labels: &s.labels,
    };
    serde_json::to_string_pretty(&doc).expect("plain data") + "\n"
}

/// `GPUActive 25.9 GiB`, or with pinned shmem `26.0 GiB (unaccounted 0.3 GiB + pinned shmem 25.7 GiB)`.
pub fn held_text(d: Option<DriverHeld>) -> String {
    match d {
        None => "not recorded".into(),
        Some(d) if d.pinned_shmem == 0 => {
            format!("{} ({})", human_bytes(d.bytes), d.counter.as_str())
        }
        Some(d) => format!(
            "{} ({} {} + pinned shmem {})",
            human_bytes(d.bytes),
            d.counter.as_str(),
            human_bytes(d.counter_bytes),
            human_bytes(d.pinned_shmem)
        ),
    }
}

fn peaks_table(s: &RunSummary) -> String {
    let rows: Vec<Vec<String>> = s
        .peaks
        .iter()
        .map(|p| {
            vec![
                p.rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                p.pid.to_string(),
                format!(
                    "{}{}",
                    display_safe(&p.device),
                    if p.home { " *" } else { "" }
                ),
                human_bytes(p.device_local),
                human_bytes(p.host),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "  no GPU memory was recorded\n".into();
    }
    let h = [
        ("RANK", Align::Right),
        ("PID", Align::Right),
        ("DEVICE (* home)", Align::Left),
        ("LOCAL", Align::Right),
        ("HOST", Align::Right),
    ];
    render("  ", &h, &rows)
}

/// Text summary, without colour.
pub fn render_text(name: &str, s: &RunSummary) -> String {
    render_text_painted(name, s, Paint::PLAIN)
}

/// Text summary, timeline severities coloured when `paint` says so.
pub fn render_text_painted(name: &str, s: &RunSummary, paint: Paint) -> String {
    let mut out = format!("Recording {}\n", display_safe(name));
    let _ = writeln!(out, "  command   {}", display_safe(&s.command.join(" ")));
    let _ = writeln!(
        out,
        "  duration  {:.1} s, {} samples every {} ms; job end: {}",
        s.duration_s,
        s.samples,
        s.interval_ms
            .map(|i| i.to_string())
            .unwrap_or_else(|| "?".into()),
        s.job_end
    );
    if let Some(note) = &s.note {
        let _ = writeln!(out, "  note      {}", display_safe(note));
    }
    if !s.labels.is_empty() {
        let l: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "  labels    {}", display_safe(&l.join(" ")));
    }
    let ranks: Vec<String> = s
        .ranks
        .iter()
        .map(|(r, pid)| format!("{r} (pid {pid})"))
        .collect();
    if !ranks.is_empty() {
        let _ = writeln!(out, "  ranks     {}", ranks.join(", "));
    }
    out.push_str("\nPeaks by process and device (resident)\n");
    out.push_str(&peaks_table(s));
    let _ = writeln!(
        out,
        "\nHost\n  MemAvailable low {}   driver-held peak {}   GPUActive peak {}   unaccounted peak {}",
        human_opt(s.mem_available_low),
        held_text(s.driver_held_peak),
        human_opt(s.gpu_active_peak),
        human_opt(s.unaccounted_peak)
    );
    if !s.kernel.is_empty() {
        let _ = writeln!(
            out,
            "\nKernel log ({} page-allocation failures, {} OOM kills, {} driver lines)",
            s.kernel_count("page_allocation_failure"),
            s.kernel_count("oom_kill"),
            s.kernel_count("driver")
        );
        for k in s.kernel.iter().take(20) {
            let _ = writeln!(
                out,
                "  {:>7.1} s  {:<23}  {}",
                k.t_s,
                display_safe(&k.kind),
                display_safe(&k.message)
            );
        }
    }
    out.push_str(&evidence_text(&s.evidence));
    out.push_str("\nTimeline findings\n");
    if s.timeline.is_empty() {
        out.push_str("  none\n");
    }
    for f in &s.timeline {
        let _ = writeln!(
            out,
            "  {}  {} at {:.1} s: {}",
            severity_label(paint, f.finding.severity),
            f.finding.kind.as_str(),
            f.t_s,
            display_safe(&f.finding.message)
        );
    }
    out
}

/// Error lines `show` prints before saying how many more there are.
const SHOWN_ERRORS: usize = 5;

/// The job's own evidence: error lines (the first few and how many), the tail's length, each rate
/// series and the markers. Nothing when the output was not captured.
fn evidence_text(e: &EvidenceSummary) -> String {
    let mut out = String::new();
    if !e.captured {
        return out;
    }
    let _ = writeln!(
        out,
        "\nJob output ({} lines, last {} kept; {} runtime/driver error lines)",
        e.lines,
        e.tail.len(),
        e.error_count()
    );
    for l in e.errors.iter().take(SHOWN_ERRORS) {
        let _ = writeln!(
            out,
            "  {:>7.1} s  {:<16}  {}",
            l.t_s,
            l.kind.as_str(),
            display_safe(&l.text)
        );
    }
    let more = e.error_count().saturating_sub(SHOWN_ERRORS as u64);
    if more > 0 {
        let _ = writeln!(out, "  … and {more} more error lines");
    }
    for r in &e.rates {
        // The unit comes from the file as written: escaped like the name.
        let v = |x: Option<f64>| x.map_or("-".into(), |x| safe(&approx(x, r.unit.as_deref())));
        let _ = writeln!(
            out,
            "  rate {}: {} points, median {}, first {}, last {}",
            display_safe(&r.name),
            r.n,
            v(r.median),
            v(r.first),
            v(r.last)
        );
    }
    for m in &e.markers {
        let _ = writeln!(out, "  marker {:>7.1} s  {}", m.t_s, display_safe(&m.text));
    }
    out
}
