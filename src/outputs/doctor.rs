//! `doctor`'s renderings: the text report (machine, job, known issues, host outlook, verdict)
//! and the JSON document.

use super::safe_text::safe;
use super::text_table::{render_fit, Align};
use crate::doctor::{HostOutlook, Job, Report};
use crate::findings::{self, Finding, Severity};
use crate::knowledge::{Assessment, NextStep};
use crate::units::human_bytes;

/// The `gpuledger.doctor/1` document.
pub fn render_json(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("plain data serialises") + "\n"
}

/// The text report, fitted to `width` columns: the device table wraps its name column, longer lines wrap under
/// their own indent.
pub fn render_text_fit(r: &Report, width: usize) -> String {
    let mut out = format!("gpuledger doctor: {}\n\n", safe(&r.root));
    out.push_str(&format!(
        "Kernel: {}\n",
        r.kernel.as_deref().map_or("not found".into(), safe)
    ));
    out.push_str("Runtime versions:\n");
    if r.versions.is_empty() && r.live {
        out.push_str("  no GPU runtime package or versioned kernel module found\n");
    } else if r.versions.is_empty() {
        out.push_str(
            "  none in this tree (doctor reads var/lib/dpkg/status when a capture has it)\n",
        );
    }
    for v in &r.versions {
        out.push_str(&format!(
            "  {} {}  ({})\n",
            v.component,
            safe(&v.version),
            safe(&v.source)
        ));
    }
    out.push_str("\nGPUs and PCI topology:\n");
    let rows: Vec<Vec<String>> = r
        .devices
        .iter()
        .map(|d| {
            let opt = |v: &Option<String>| v.as_deref().map_or("-".to_string(), safe);
            vec![
                safe(&d.slot),
                opt(&d.pci_id),
                opt(&d.name),
                opt(&d.driver),
                opt(&d.root_port),
                if d.p2pmem { "yes".into() } else { "no".into() },
            ]
        })
        .collect();
    let headers = [
        ("DEVICE", Align::Left),
        ("ID", Align::Left),
        ("NAME", Align::Wrap),
        ("DRIVER", Align::Left),
        ("ROOT PORT", Align::Left),
        ("P2PMEM", Align::Left),
    ];
    if rows.is_empty() {
        out.push_str("  no DRM or accel devices\n");
    } else {
        out.push_str(&render_fit("  ", &headers, &rows, width));
    }
    out.push_str(&format!("  {}\n", r.p2p));
    if let Some(job) = &r.job {
        out.push_str(&render_job(job));
    }
    out.push_str("\nKnown-issues base:\n");
    for b in &r.bases {
        out.push_str(&format!("  {}\n", safe(&b.sentence())));
    }
    out.push_str(&render_issues(&r.known_issues));
    if let Some(h) = &r.host {
        out.push_str(&render_host(h));
    }
    if !r.limitations.is_empty() {
        out.push_str("\nLimitations of gpuledger on these GPUs (not findings):\n");
        for l in &r.limitations {
            out.push_str(&format!("  {}: {}\n", l.id, l.text));
        }
    }
    out.push_str(&render_verdict(&r.findings, &r.notes));
    if let Some(step) = &r.known_issues.next_step {
        out.push_str(&render_next_step(step));
    }
    super::wrap::fit(&out, width)
}

/// The closing verdict: the snapshot's findings of this root by severity, each named, and the
/// notes that limit it (an unreadable kernel log).
fn render_verdict(found: &[Finding], notes: &[String]) -> String {
    let mut out = String::from("\nFindings now (as `gpuledger` shows them for this root):\n");
    if found.is_empty() {
        out.push_str("  none\n");
    }
    for f in found {
        out.push_str(&format!(
            "  {} {}: {}\n",
            f.severity.as_str().to_uppercase(),
            f.kind.as_str(),
            safe(&f.message)
        ));
    }
    for n in notes {
        out.push_str(&format!("  note: {}\n", safe(n)));
    }
    let count = |s: Severity| found.iter().filter(|f| f.severity == s).count();
    let verdict = match findings::worst(found) {
        None => "Verdict: OK, no findings".to_string(),
        Some(w) => format!(
            "Verdict: {}: {} finding(s), {} critical, {} warning, {} info",
            w.as_str().to_uppercase(),
            found.len(),
            count(Severity::Critical),
            count(Severity::Warning),
            count(Severity::Info)
        ),
    };
    out.push_str(&format!("\n{verdict}\n"));
    out
}

fn render_job(job: &Job) -> String {
    let cmd: Vec<String> = job.command.iter().map(|a| safe(a)).collect();
    let mut out = format!("\nJob (not run): {}\n", cmd.join(" "));
    if job.env.is_empty() {
        out.push_str("  environment: no device masks or runtime variables set\n");
    }
    for (k, v) in &job.env {
        out.push_str(&format!("  {}={}\n", safe(k), safe(v)));
    }
    for (vendor, (seen, present)) in &job.visible {
        out.push_str(&format!(
            "  visible: {seen} of {present} GPU(s) of vendor {vendor}\n"
        ));
    }
    out
}

/// The matches strongest first: the first in full, the others with only the facts and
/// claims not said above; their workarounds are the next step's alternatives.
fn render_issues(a: &Assessment) -> String {
    let mut out = String::from("\nKnown issues (strongest evidence first):\n");
    if a.matches.is_empty() {
        out.push_str("  none applies\n");
    }
    let mut said: Vec<&str> = Vec::new();
    for (i, m) in a.matches.iter().enumerate() {
        out.push_str(&format!(
            "  {} {}: {} [{}]\n",
            m.severity.as_str().to_uppercase(),
            m.id,
            m.title,
            m.status
        ));
        for f in m.facts.iter().filter(|f| !said.contains(&f.as_str())) {
            out.push_str(&format!("    - {}\n", safe(f)));
        }
        said.extend(m.facts.iter().map(String::as_str));
        for q in &m.vendor_statements {
            out.push_str(&format!(
                "    on the record (vendor, {}, {}): \"{}\"\n",
                q.date, q.link, q.text
            ));
        }
        for c in &m.claims {
            out.push_str(&format!("    {}: {}\n", c.confidence.as_str(), c.claim));
        }
        if i == 0 {
            for w in &m.workarounds {
                out.push_str(&format!(
                    "    workaround: {} (caveat: {})\n",
                    w.what, w.caveat
                ));
            }
        }
        out.push_str(&format!("    see: {}\n", m.links.join(" ")));
    }
    for n in &a.not_matched {
        out.push_str(&format!("  not applying: {}: {}\n", n.id, safe(&n.reason)));
    }
    out
}

/// The one thing to try first, how to measure it, and the alternatives.
fn render_next_step(step: &NextStep) -> String {
    let mut out = format!(
        "\nNext step ({}):\n  try first: {}\n    caveat: {}\n",
        step.issue, step.first.what, step.first.caveat
    );
    if let Some(m) = &step.first.measured {
        out.push_str(&format!("    measured: {}\n", m.sentence()));
    }
    if let Some(cmd) = &step.experiment {
        out.push_str(&format!("    measure it: {}\n", safe(cmd)));
    }
    if !step.alternatives.is_empty() {
        out.push_str("  then:\n");
    }
    for alt in &step.alternatives {
        out.push_str(&format!(
            "    - {} ({}; caveat: {})\n",
            alt.workaround.what, alt.issue, alt.workaround.caveat
        ));
        if let Some(m) = &alt.workaround.measured {
            out.push_str(&format!("      measured: {}\n", m.sentence()));
        }
    }
    out
}

fn render_host(h: &HostOutlook) -> String {
    let mut out = format!(
        "\nHost RAM if the peer-mirror pattern occurs at {} ranks ({}), each rank's allocations \
         pinned again on its {} peer(s):\n",
        h.ranks, h.ranks_basis, h.peers_each
    );
    if let (Some(per), Some(need), Some(fits)) = (h.per_rank, h.needed, h.fits) {
        out.push_str(&format!(
            "  {} × {} × {} = {} of pinned host RAM against MemTotal {}: {}\n",
            h.ranks,
            h.peers_each,
            human_bytes(per),
            human_bytes(need),
            human_bytes(h.mem_total),
            if fits { "fits" } else { "does not fit" }
        ));
    }
    out.push_str(&format!(
        "  Per-rank device allocations above {} do not fit in MemTotal {} ({} available now).\n",
        human_bytes(h.largest_per_rank_that_fits),
        human_bytes(h.mem_total),
        human_bytes(h.mem_available)
    ));
    out
}
