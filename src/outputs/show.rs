//! `show`: the summary of a recording, as text or JSON. Everything shown comes from one
//! [`RunSummary`]; nothing is recomputed here.

use super::safe_text::{display_safe, safe};
use super::table::{finding_row, group_text};
use super::text_table::{render_fit, Align, Paint};
use super::wrap;
use crate::findings::group::{groups, Member};
use crate::findings::verdict::Verdict;
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
    interval_ms: Option<u64>,
    cadence: Option<crate::timeline::Cadence>,
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
/// finding's severity at its peak and its worst over time), `evidence`, the followed job's
/// `labels`, `interval_ms` and `cadence` (samples not taken, when any) were added without breaking it).
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
        interval_ms: s.interval_ms,
        cadence: s.cadence,
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

fn peaks_table(s: &RunSummary, width: usize) -> String {
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
        ("DEVICE (* home)", Align::Wrap),
        ("LOCAL", Align::Right),
        ("HOST", Align::Right),
    ];
    render_fit("  ", &h, &rows, width)
}

/// Text summary, without colour.
pub fn render_text(name: &str, s: &RunSummary) -> String {
    render_text_painted(name, s, Paint::PLAIN)
}

/// Text summary, timeline severities coloured when `paint` says so, many findings of one kind
/// grouped.
pub fn render_text_painted(name: &str, s: &RunSummary, paint: Paint) -> String {
    render_text_detail(name, s, paint, false)
}

/// Text summary; `each` lists every timeline finding instead of folding many of one kind and
/// severity into a group line (`-v`).
pub fn render_text_detail(name: &str, s: &RunSummary, paint: Paint, each: bool) -> String {
    let width = paint.width;
    let mut out = verdict_line(s, paint);
    let _ = writeln!(out, "\nRecording {}", display_safe(name));
    let field =
        |label: &str, text: &str| wrap::hanging(&format!("  {label:<8}  "), 12, 12, text, width);
    out.push_str(&field(
        "command",
        &display_safe(&super::safe_text::command_line(&s.command)),
    ));
    out.push_str(&field(
        "duration",
        &format!(
            "{:.1} s, {} every {} ms; job end: {}",
            s.duration_s,
            crate::units::count(s.samples as usize, "sample"),
            s.interval_ms
                .map(|i| i.to_string())
                .unwrap_or_else(|| "?".into()),
            s.job_end
        ),
    ));
    if let Some(c) = &s.cadence {
        out.push_str(&field(
            "missed",
            &format!(
                "{} not taken (achieved every {} ms, longest gap {:.1} s): the machine or the \
                 recorder was too busy; values between samples are not seen",
                crate::units::count(c.missed as usize, "sample"),
                c.achieved_ms,
                c.longest_gap_ms as f64 / 1000.0
            ),
        ));
    }
    if let Some(note) = &s.note {
        out.push_str(&field("note", &display_safe(note)));
    }
    if !s.labels.is_empty() {
        let l: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&field("labels", &display_safe(&l.join(" "))));
    }
    let ranks: Vec<String> = s
        .ranks
        .iter()
        .map(|(r, pid)| format!("{r} (pid {pid})"))
        .collect();
    if !ranks.is_empty() {
        out.push_str(&field("ranks", &ranks.join(", ")));
    }
    out.push_str("\nPeaks by process and device (resident)\n");
    out.push_str(&peaks_table(s, width));
    out.push_str("\nHost\n");
    out.push_str(&wrap::paragraph(
        "  ",
        &format!(
            "MemAvailable low {}   driver-held peak {}   GPUActive peak {}   unaccounted peak {}",
            human_opt(s.mem_available_low),
            held_text(s.driver_held_peak),
            human_opt(s.gpu_active_peak),
            human_opt(s.unaccounted_peak)
        ),
        width,
    ));
    out.push_str(&kernel_text(s, width));
    out.push_str(&evidence_text(&s.evidence, width));
    out.push_str("\nTimeline findings\n");
    out.push_str(&timeline_text(&s.timeline, paint, each));
    out
}

/// "CRITICAL: 2 findings (peer_mirror × 2); driver-held peak 37.0 GiB, MemAvailable low …",
/// each timeline finding at its worst severity.
fn verdict_line(s: &RunSummary, paint: Paint) -> String {
    let v = Verdict::of(
        s.timeline
            .iter()
            .map(|f| (f.severity(), f.finding.kind.as_str())),
    );
    let context = format!(
        "driver-held peak {}, MemAvailable low {}",
        human_opt(s.driver_held_bytes()),
        human_opt(s.mem_available_low)
    );
    super::verdict::line(&v, &context, paint)
}

/// The kernel log's first lines, each message under its time and kind.
fn kernel_text(s: &RunSummary, width: usize) -> String {
    let mut out = String::new();
    if s.kernel.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nKernel log ({} page-allocation failures, {} OOM kills, {} driver lines)",
        s.kernel_count("page_allocation_failure"),
        s.kernel_count("oom_kill"),
        s.kernel_count("driver")
    );
    for k in s.kernel.iter().take(20) {
        let first = format!("  {:>7.1} s  {:<23}  ", k.t_s, display_safe(&k.kind));
        let cols = first.chars().count();
        out.push_str(&wrap::hanging(
            &first,
            cols,
            13,
            &display_safe(&k.message),
            width,
        ));
    }
    out
}

/// Timeline findings, most severe first, each at its worst severity; more than a few of one
/// kind and severity are one line unless `each`.
fn timeline_text(found: &[TimelineFinding], paint: Paint, each: bool) -> String {
    if found.is_empty() {
        return "  none\n".into();
    }
    let mut out = String::new();
    for g in groups(found) {
        if g.folded() && !each {
            let text = format!("{}: {}", g.kind.as_str(), group_text(&g, "devices"));
            out.push_str(&finding_row(paint, g.severity, &text));
            continue;
        }
        for f in g.findings {
            let text = format!(
                "{} at {:.1} s: {}",
                f.finding.kind.as_str(),
                f.t_s,
                display_safe(&f.finding.message)
            );
            out.push_str(&finding_row(paint, f.severity(), &text));
        }
    }
    out
}

/// Error lines `show` prints before saying how many more there are.
const SHOWN_ERRORS: usize = 5;

/// The job's own evidence: error lines (the first few and how many), the tail's length, each rate
/// series and the markers. Nothing when the output was not captured.
fn evidence_text(e: &EvidenceSummary, width: usize) -> String {
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
        let first = format!("  {:>7.1} s  {:<16}  ", l.t_s, l.kind.as_str());
        let cols = first.chars().count();
        out.push_str(&wrap::hanging(
            &first,
            cols,
            13,
            &display_safe(&l.text),
            width,
        ));
    }
    let more = e.error_count().saturating_sub(SHOWN_ERRORS as u64);
    if more > 0 {
        let _ = writeln!(out, "  … and {more} more error lines");
    }
    for r in &e.rates {
        // The unit comes from the file as written: escaped like the name.
        let v = |x: Option<f64>| x.map_or("-".into(), |x| safe(&approx(x, r.unit.as_deref())));
        let text = format!(
            "rate {}: {} points, median {}, first {}, last {}",
            display_safe(&r.name),
            r.n,
            v(r.median),
            v(r.first),
            v(r.last)
        );
        out.push_str(&wrap::paragraph("  ", &text, width));
    }
    for m in &e.markers {
        let first = format!("  marker {:>7.1} s  ", m.t_s);
        let cols = first.chars().count();
        out.push_str(&wrap::hanging(
            &first,
            cols,
            13,
            &display_safe(&m.text),
            width,
        ));
    }
    out
}
