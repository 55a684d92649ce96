//! `gpuledger report`.

use crate::cli::{Globals, ReportPlan};
use anyhow::{Context, Result};
use gpuledger::findings::{Finding, Thresholds};
use gpuledger::knowledge::KnownIssues;
use gpuledger::ledger::Ledger;
use gpuledger::observe::{KernelLog, Observation, Observer};
use gpuledger::outputs::job_set;
use gpuledger::recording::Recording;
use gpuledger::report::{nvidia_from_nvml, recorded, render, ReportInput};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::snapshot::Snapshot;
use gpuledger::sources::kernel_log::WholeLog;
use gpuledger::sources::system_info::{self, SystemInfo};
use std::process::ExitCode;

/// Runs `report`'s plan; the plan has refused an existing output without --force.
pub fn run(g: &Globals, plan: ReportPlan) -> Result<ExitCode> {
    let t = &g.thresholds;
    let runs = plan
        .recordings
        .iter()
        .map(|f| super::recordings::open_run(f, "report"))
        .collect::<Result<Vec<_>>>()?;
    let (recordings, sets): (Vec<_>, Vec<_>) =
        runs.into_iter().map(|r| ((r.name, r.rec), r.set)).unzip();
    let nodes: Vec<String> = sets
        .iter()
        .zip(&recordings)
        .filter_map(|(set, (name, _))| {
            set.as_ref()
                .map(|s| format!("{name}\n{}", job_set::render_text(s)))
        })
        .collect();
    let node_names: Vec<String> = sets
        .iter()
        .flatten()
        // A node shown twice carries its file name in brackets; the name itself is redacted.
        .flat_map(|s| {
            s.nodes
                .iter()
                .map(|n| n.node.split(" (").next().unwrap_or("").to_string())
        })
        .collect();
    let mut sampler = Sampler::new(g.open_root()?, Scope::All, SamplerOptions::default());
    let snapshot = sampler.sample()?;
    // Recordings and no --root: the report describes the recorded machine, and says how the
    // one it is written on differs; the known issues are matched against the machine described.
    let (known, machine) = match (&g.root, recordings.first()) {
        (None, Some((name, rec))) => {
            let here = this_machine(&sampler, snapshot, t);
            let recorded = recorded_machine(name, rec, &recordings, &here);
            let known = KnownIssues::of_recording(&recorded.system, &rec.devices);
            (known, recorded)
        }
        _ => {
            let known = KnownIssues::of_machine(sampler.root(), &snapshot);
            (known, this_machine(&sampler, snapshot, t))
        }
    };
    let known = known.context("the embedded known-issues base")?;
    let Machine {
        ledger,
        findings,
        system,
        kernel_log,
        note: machine_note,
    } = machine;
    let mut seen = findings.clone();
    for (_, rec) in &recordings {
        seen.extend(rec.findings.iter().map(|f| f.at_peak()));
    }
    let related = known.assess(&seen);
    let text = render(&ReportInput {
        template: plan.template,
        redact: plan.redact,
        each: plan.verbose,
        ledger: &ledger,
        findings: &findings,
        system: &system,
        recordings: &recordings,
        related: &related,
        nodes: &nodes,
        node_names: &node_names,
        kernel_log: &kernel_log,
        machine_note,
    });
    match &plan.output {
        None => super::print(&text)?,
        Some(p) => {
            std::fs::write(p, &text)
                .with_context(|| format!("cannot write report {}", p.display()))?;
            eprintln!(
                "wrote {}: review it, fill in what says \"not found\", and attach it",
                p.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What a report describes: a machine's devices and processes, findings, facts and kernel log.
struct Machine {
    ledger: Ledger,
    findings: Vec<Finding>,
    system: SystemInfo,
    kernel_log: WholeLog,
    /// Which machine this is, when it is not the one the report is written on.
    note: Option<String>,
}

/// The machine (or `--root`) being sampled.
fn this_machine(sampler: &Sampler, snapshot: Snapshot, t: &Thresholds) -> Machine {
    let root = sampler.root();
    let nvml = snapshot.nvml.clone();
    let mut observer = Observer::new(t.clone()).kernel_log(KernelLog::Fresh);
    let Observation { ledger, findings } = observer.observe(root, snapshot);
    let kernel_log = observer.last_kernel_log().cloned().unwrap_or_default();
    let pythons: Vec<u32> = ledger
        .processes
        .iter()
        .filter(|p| p.comm.starts_with("python"))
        .map(|p| p.pid)
        .collect();
    let slots: Vec<String> = ledger.devices.iter().map(|d| d.id.clone()).collect();
    let mut system = system_info::gather(sampler.root(), &pythons, &slots);
    nvidia_from_nvml(&mut system, &nvml);
    Machine {
        ledger,
        findings,
        system,
        kernel_log,
        note: None,
    }
}

/// The machine recording `rec` (named `name`) was made on, as the recording kept it, with the
/// findings of all `recordings` at their peaks and how `here` differs from it.
fn recorded_machine(
    name: &str,
    rec: &Recording,
    recordings: &[(String, Recording)],
    here: &Machine,
) -> Machine {
    let system = recorded::system(rec);
    let differs = recorded::differences(rec, &system, &here.system, &here.ledger);
    let mut findings: Vec<Finding> = recordings
        .iter()
        .flat_map(|(_, r)| r.findings.iter().map(|f| f.at_peak()))
        .collect();
    gpuledger::findings::rank(&mut findings);
    Machine {
        note: Some(recorded::note(name, &system, &differs)),
        ledger: recorded::ledger(rec),
        findings,
        system,
        // This machine's log is not the recorded one's; the recordings' kernel lines are.
        kernel_log: WholeLog {
            unreadable: Some(
                "the recorded machine's log is only what the recordings kept, and they kept no kernel line"
                    .into(),
            ),
            ..WholeLog::default()
        },
    }
}
