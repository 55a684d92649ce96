//! `gpuledger doctor`: a preflight of the machine and, with `-- CMD`, of the job's environment
//! (read from this shell, the command is not run): versions, GPUs and their PCI topology, device
//! masks and rank count, the known issues that apply, and the host RAM the job would need at its
//! rank count if their peer-mirror pattern occurs (`timeline::project`).

use crate::cli::{DoctorPlan, Format, Globals};
use anyhow::{Context, Result};
use gpuledger::findings::{self, Finding, Severity};
use gpuledger::knowledge::{self, Assessment, Base, Facts, VersionFact};
use gpuledger::ledger::Ledger;
use gpuledger::observe::{KernelLog, Observation, Observer};
use gpuledger::outputs::safe_text::safe;
use gpuledger::outputs::text_table::{render, Align};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sources::{proc_pid, system_info};
use gpuledger::timeline::project::{peers_per_rank, project, Peers};
use gpuledger::units::human_bytes;
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Serialize)]
struct Report {
    schema: &'static str,
    root: String,
    live: bool,
    kernel: Option<String>,
    versions: Vec<VersionFact>,
    devices: Vec<DeviceRow>,
    p2p: String,
    job: Option<Job>,
    known_issues: Assessment,
    host: Option<HostOutlook>,
    /// gpuledger's own blind spots on this machine's GPUs (never findings).
    limitations: Vec<knowledge::Limitation>,
    /// What the snapshot of this root shows (its findings and the known issues that apply),
    /// most severe first: the verdict, and what `--fail-on` applies to.
    findings: Vec<Finding>,
    /// A scan note, such as an unreadable kernel log.
    notes: Vec<String>,
}

#[derive(Serialize)]
struct DeviceRow {
    slot: String,
    pci_id: Option<String>,
    name: Option<String>,
    driver: Option<String>,
    root_port: Option<String>,
    switch_path: Vec<String>,
    p2pmem: bool,
}

#[derive(Serialize)]
struct Job {
    command: Vec<String>,
    env: BTreeMap<String, String>,
    /// Vendor → (devices visible to the job, devices present).
    visible: BTreeMap<String, (usize, usize)>,
}

#[derive(Serialize)]
struct HostOutlook {
    ranks: u32,
    ranks_basis: String,
    peers_each: u32,
    mem_total: u64,
    mem_available: u64,
    per_rank: Option<u64>,
    needed: Option<u64>,
    fits: Option<bool>,
    largest_per_rank_that_fits: u64,
}

/// Runs `doctor`'s plan.
pub fn run(g: &Globals, plan: DoctorPlan) -> Result<ExitCode> {
    let args = &plan;
    let t = &g.thresholds;
    let root = g.open_root()?;
    let base = Base::embedded().context("the embedded known-issues base")?;
    let sys = system_info::gather(&root, &[], &[]);
    let mut sampler = Sampler::new(root, Scope::All, SamplerOptions::default());
    let snap = sampler.sample()?;
    let root = sampler.root();
    // Doctor matches the known issues itself, against the job's environment as well; the
    // machine's facts below read the snapshot too, hence the copy.
    let Observation {
        ledger,
        findings: mut found,
    } = Observer::new(t.clone())
        .kernel_log(KernelLog::Fresh)
        .observe(root, snap.clone());
    let (mut facts, places) = Facts::of_machine(&base, root, &snap, &sys, found.clone());
    let name_of = |slot: &str| {
        let drm = snap
            .devices
            .iter()
            .find(|d| d.id == slot)
            .and_then(|d| d.name.clone());
        drm.or_else(|| {
            snap.nvml
                .iter()
                .find(|g| g.bus_id == slot)
                .map(|g| g.name.clone())
        })
    };
    let devices: Vec<DeviceRow> = facts
        .devices
        .iter()
        .zip(places)
        .map(|(fact, place)| DeviceRow {
            slot: fact.slot.clone(),
            pci_id: fact.pci_id.clone(),
            name: name_of(&fact.slot),
            driver: fact.driver.clone(),
            root_port: place.root_port,
            switch_path: place.path,
            p2pmem: place.p2pmem,
        })
        .collect();
    let job = (!args.command.is_empty()).then(|| {
        let pairs: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
        facts.env = proc_pid::filter_environ(&pairs);
        Job {
            command: args.command.clone(),
            env: facts.env.clone(),
            visible: visible_by_vendor(&facts),
        }
    });
    let known_issues = knowledge::assess(&base, &facts);
    let host = outlook(&ledger, &facts, &args.command, args.vram_per_rank)?;
    found.extend(known_issues.matches.iter().map(knowledge::finding));
    findings::rank(&mut found);
    let notes = ledger
        .stats
        .issues
        .iter()
        .filter(|i| i.path == "/dev/kmsg")
        .map(|i| i.detail.clone())
        .collect();
    let report = Report {
        schema: "gpuledger.doctor/1",
        root: root.label().to_string(),
        kernel: sys.kernel.clone(),
        live: root.is_live(),
        versions: facts.versions.clone(),
        p2p: p2p_sentence(&devices),
        devices,
        job,
        known_issues,
        host,
        limitations: knowledge::limitations(&facts),
        findings: found,
        notes,
    };
    if args.format == Format::Json {
        super::print(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        super::print(&render_text(&report))?;
    }
    Ok(super::fail_on(
        findings::worst(&report.findings),
        args.fail_on,
    ))
}

/// Vendor → (visible, present) for the PCI GPUs of each vendor.
fn visible_by_vendor(facts: &Facts) -> BTreeMap<String, (usize, usize)> {
    let mut present: BTreeMap<String, usize> = BTreeMap::new();
    for d in &facts.devices {
        if let Some(v) = d.vendor() {
            *present.entry(v.to_string()).or_default() += 1;
        }
    }
    present
        .into_iter()
        .map(|(v, n)| {
            let (seen, _) = knowledge::visible(&v, n, &facts.env);
            (v, (seen, n))
        })
        .collect()
}

/// The job's rank count: the launcher's flag, else one rank per visible GPU of the largest
/// vendor group.
fn ranks(facts: &Facts, command: &[String]) -> (u32, String) {
    if let Some((n, flag)) = knowledge::ranks_of(command) {
        return (n, format!("{flag} in the command"));
    }
    let most = visible_by_vendor(facts)
        .values()
        .map(|(seen, _)| *seen)
        .max()
        .unwrap_or(0);
    (
        u32::try_from(most).unwrap_or(u32::MAX),
        "one rank per visible GPU (no launcher flag in the command)".to_string(),
    )
}

/// Host RAM the ranks would pin if each rank's allocations were mirrored on all its peers.
fn outlook(
    ledger: &Ledger,
    facts: &Facts,
    command: &[String],
    per_rank: Option<u64>,
) -> Result<Option<HostOutlook>> {
    let (ranks, ranks_basis) = ranks(facts, command);
    let (Some(total), Some(available)) = (ledger.host.mem_total, ledger.host.mem_available) else {
        return Ok(None);
    };
    if ranks < 2 {
        return Ok(None);
    }
    let peers_each = peers_per_rank(ranks, Peers::All);
    // Against MemTotal, as the issue reports do: what the job needs on this machine, whatever
    // else runs now (MemAvailable is shown beside it).
    let row = match per_rank {
        Some(b) => project(ranks, Peers::All, b, total, 0)
            .context("doctor --vram-per-rank")?
            .rows
            .into_iter()
            .find(|r| r.ranks == ranks),
        None => None,
    };
    let copies = u64::from(ranks) * u64::from(peers_each);
    Ok(Some(HostOutlook {
        ranks,
        ranks_basis,
        peers_each,
        mem_total: total,
        mem_available: available,
        per_rank,
        needed: row.as_ref().map(|r| r.needed),
        fits: row.as_ref().map(|r| r.fits),
        largest_per_rank_that_fits: total / copies.max(1),
    }))
}

fn p2p_sentence(devices: &[DeviceRow]) -> String {
    let gpus: Vec<&DeviceRow> = devices.iter().filter(|d| d.slot.contains(':')).collect();
    let ports: std::collections::BTreeSet<&str> =
        gpus.iter().filter_map(|d| d.root_port.as_deref()).collect();
    let published = gpus.iter().filter(|d| d.p2pmem).count();
    let placement = if gpus.len() < 2 {
        "fewer than two PCI GPUs: no peer traffic".to_string()
    } else if ports.len() < gpus.len().min(2) {
        "root ports not known (no /sys/bus/pci/devices links)".to_string()
    } else if ports.len() > 1 {
        format!(
            "GPUs under {} different root ports: peer traffic crosses the host bridge, which the \
             kernel's P2PDMA check refuses unless it whitelists that bridge, so peer access may be \
             host-backed",
            ports.len()
        )
    } else {
        "all GPUs under one root port: peer traffic can stay below it (switch, ACS permitting)"
            .to_string()
    };
    format!(
        "{placement}. p2pmem published by {published} of {} GPU(s); the kernel's per-pair P2P \
         verdict is not exported to sysfs.",
        gpus.len()
    )
}

fn render_text(r: &Report) -> String {
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
        ("NAME", Align::Left),
        ("DRIVER", Align::Left),
        ("ROOT PORT", Align::Left),
        ("P2PMEM", Align::Left),
    ];
    if rows.is_empty() {
        out.push_str("  no DRM or accel devices\n");
    } else {
        out.push_str(&render("  ", &headers, &rows));
    }
    out.push_str(&format!("  {}\n", r.p2p));
    if let Some(job) = &r.job {
        out.push_str(&render_job(job));
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
    out
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

fn render_issues(a: &Assessment) -> String {
    let mut out = String::from("\nKnown issues:\n");
    if a.matches.is_empty() {
        out.push_str("  none applies\n");
    }
    for m in &a.matches {
        out.push_str(&format!(
            "  {} {}: {} [{}]\n",
            m.severity.as_str().to_uppercase(),
            m.id,
            m.title,
            m.status
        ));
        for f in &m.facts {
            out.push_str(&format!("    - {}\n", safe(f)));
        }
        for c in &m.claims {
            out.push_str(&format!("    {}: {}\n", c.confidence.as_str(), c.claim));
        }
        for w in &m.workarounds {
            out.push_str(&format!(
                "    workaround: {} (caveat: {})\n",
                w.what, w.caveat
            ));
        }
        out.push_str(&format!("    see: {}\n", m.links.join(" ")));
    }
    for n in &a.not_matched {
        out.push_str(&format!("  not applying: {}: {}\n", n.id, safe(&n.reason)));
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
