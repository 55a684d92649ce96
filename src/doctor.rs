//! `doctor`: a preflight of a machine and, with a job's command, of the job's environment (read
//! from the caller's, the command is not run): versions, GPUs and their PCI topology, device
//! masks and rank count, the known issues that apply, and the host RAM the job would need at
//! its rank count if their peer-mirror pattern occurs ([`crate::timeline::project`]). The
//! renderings are in [`crate::outputs::doctor`].

use crate::findings::window::Since;
use crate::findings::{self, Finding, Thresholds};
use crate::knowledge::{self, Assessment, Base, Facts, KnowledgeError, VersionFact};
use crate::ledger::Ledger;
use crate::observe::{KernelLog, Observation, Observer};
use crate::root::Root;
use crate::sampler::{SampleError, Sampler, SamplerOptions, Scope};
use crate::sources::{proc_pid, system_info};
use crate::timeline::project::{peers_per_rank, project, Peers, ProjectError};
use serde::Serialize;
use std::collections::BTreeMap;
use thiserror::Error;

/// What doctor examines.
#[derive(Debug, Clone, Default)]
pub struct DoctorPlan {
    /// Finding thresholds.
    pub thresholds: Thresholds,
    /// The job's command (read, not run); empty for the machine alone.
    pub command: Vec<String>,
    /// The job's environment as `KEY=VALUE` lines (the caller's own).
    pub environ: Vec<String>,
    /// Device memory each rank allocates, for the host-RAM projection.
    pub vram_per_rank: Option<u64>,
    /// Kernel-log findings before it are history (info).
    pub since: Since,
    /// `--known-issues DIR`: a user base read over the built-in one (and the system directory).
    pub known_issues: Option<std::path::PathBuf>,
}

/// Why doctor could not examine the machine.
#[derive(Debug, Error)]
pub enum DoctorError {
    /// The known-issues base does not load: a user base's bad entry (named by file and
    /// field), or a broken built-in one (a build defect).
    #[error("the known-issues base")]
    Base(#[from] KnowledgeError),
    /// Sampling failed.
    #[error(transparent)]
    Sample(#[from] SampleError),
    /// `--vram-per-rank` cannot be projected.
    #[error("doctor --vram-per-rank")]
    Project(#[from] ProjectError),
}

/// What doctor found: the machine, the job, the known issues and the verdict
/// (`gpuledger.doctor/1`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `gpuledger.doctor/1`.
    pub schema: &'static str,
    /// The root examined.
    pub root: String,
    /// Whether it is the live machine.
    pub live: bool,
    /// The kernel release.
    pub kernel: Option<String>,
    /// Runtime, driver and firmware versions.
    pub versions: Vec<VersionFact>,
    /// The GPUs.
    pub devices: Vec<DeviceRow>,
    /// Peer-to-peer placement, in a sentence.
    pub p2p: String,
    /// The job, with `-- CMD`.
    pub job: Option<Job>,
    /// The bases the known issues came from (built-in, then user directories), with dates.
    pub bases: Vec<knowledge::BaseSource>,
    /// The known issues that apply, and those that do not.
    pub known_issues: Assessment,
    /// The host-RAM outlook at the job's rank count.
    pub host: Option<HostOutlook>,
    /// gpuledger's own blind spots on this machine's GPUs (never findings).
    pub limitations: Vec<knowledge::Limitation>,
    /// What the snapshot of this root shows (its findings and the known issues that apply),
    /// most severe first: the verdict, and what `--fail-on` applies to.
    pub findings: Vec<Finding>,
    /// A scan note, such as an unreadable kernel log.
    pub notes: Vec<String>,
}

/// One GPU with its PCI placement.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceRow {
    /// PCI slot (or NVML bus id).
    pub slot: String,
    /// Vendor:device id.
    pub pci_id: Option<String>,
    /// Marketing name.
    pub name: Option<String>,
    /// Kernel driver.
    pub driver: Option<String>,
    /// The PCIe root port above it.
    pub root_port: Option<String>,
    /// Bridges between the root port and the device.
    pub switch_path: Vec<String>,
    /// Whether it publishes p2pmem.
    pub p2pmem: bool,
}

/// The job's environment as `-- CMD` describes it (read, not run).
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    /// The command.
    pub command: Vec<String>,
    /// Its allow-listed environment (this shell's).
    pub env: BTreeMap<String, String>,
    /// Vendor → (devices visible to the job, devices present).
    pub visible: BTreeMap<String, (usize, usize)>,
}

/// Host RAM the job would pin at its rank count if its allocations were mirrored on every
/// peer.
#[derive(Debug, Clone, Serialize)]
pub struct HostOutlook {
    /// Ranks.
    pub ranks: u32,
    /// Where the rank count comes from.
    pub ranks_basis: String,
    /// Peers each rank's allocations are mirrored on.
    pub peers_each: u32,
    /// MemTotal.
    pub mem_total: u64,
    /// MemAvailable now.
    pub mem_available: u64,
    /// `--vram-per-rank`.
    pub per_rank: Option<u64>,
    /// Host RAM the mirrors would pin.
    pub needed: Option<u64>,
    /// Whether that fits in MemTotal.
    pub fits: Option<bool>,
    /// The largest per-rank allocation whose mirrors fit.
    pub largest_per_rank_that_fits: u64,
}

/// Examines the machine behind `root` (and the job of `plan`).
pub fn examine(root: Root, plan: &DoctorPlan) -> Result<Report, DoctorError> {
    let base = Base::installed(plan.known_issues.as_deref())?;
    let sys = system_info::gather(&root, &[], &[]);
    let mut sampler = Sampler::new(root, Scope::All, SamplerOptions::default());
    let snap = sampler.sample()?;
    let root = sampler.root();
    // Doctor matches the known issues itself, against the job's environment as well; the
    // machine's facts below read the snapshot too, hence the copy.
    let Observation {
        ledger,
        findings: mut found,
    } = Observer::new(plan.thresholds.clone())
        .kernel_log(KernelLog::Fresh)
        .window(plan.since, crate::clock::system())
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
    facts.command = plan.command.clone();
    let job = (!plan.command.is_empty()).then(|| {
        facts.env = proc_pid::filter_environ(&plan.environ);
        Job {
            command: plan.command.clone(),
            env: facts.env.clone(),
            visible: visible_by_vendor(&facts),
        }
    });
    let known_issues = knowledge::assess(&base, &facts);
    let host = outlook(&ledger, &facts, &plan.command, plan.vram_per_rank)?;
    found.extend(knowledge::findings(&known_issues));
    findings::rank(&mut found);
    let notes = ledger
        .stats
        .issues
        .iter()
        .filter(|i| i.path == "/dev/kmsg")
        .map(|i| i.detail.clone())
        .collect();
    Ok(Report {
        schema: "gpuledger.doctor/1",
        root: root.label().to_string(),
        kernel: sys.kernel.clone(),
        live: root.is_live(),
        versions: facts.versions.clone(),
        p2p: p2p_sentence(&devices),
        devices,
        job,
        bases: base.sources.clone(),
        known_issues,
        host,
        limitations: knowledge::limitations(&facts),
        findings: found,
        notes,
    })
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
) -> Result<Option<HostOutlook>, ProjectError> {
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
        Some(b) => project(ranks, Peers::All, b, total, 0)?
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

/// Where the GPUs sit for peer traffic, in a sentence.
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
