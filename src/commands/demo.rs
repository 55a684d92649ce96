//! `gpuledger demo`: the seed's regression, proven in the simulator in a few seconds.

use anyhow::{Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::observe::Observer;
use gpuledger::outputs::diff::render_diff;
use gpuledger::outputs::{show, table};
use gpuledger::recording;
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sim::{run::record, Backing, LiveWriter, Scenario, SimParams, Simulation};
use gpuledger::timeline::diff::diff;
use gpuledger::timeline::RunSummary;
use gpuledger::tree_writer::TreeWriter;
use std::path::Path;
use std::process::ExitCode;

/// Runs the demo, keeping its files in `keep` when given.
pub fn run(keep: Option<&Path>, t: &Thresholds) -> Result<ExitCode> {
    let tmp = tempfile::tempdir()?;
    let dir = keep.unwrap_or(tmp.path());
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut out = String::from(
        "gpuledger demo: a 2-rank PyTorch DDP job on 2× Intel Arc Pro B70 (xe),\n\
simulated twice:\n\
  A = compute-runtime 26.22 behaviour (peer registrations pinned eagerly)\n\
  B = 26.05 behaviour (same registrations, bookkeeping only)\n\n",
    );
    let mut files = Vec::new();
    for (name, backing) in [
        ("A-eager", Backing::Eager),
        ("B-deferred", Backing::Deferred),
    ] {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.backing = backing;
        let sim = Simulation::new(p);
        let ledger_file = dir.join(format!("{name}.ledger"));
        let _ = std::fs::remove_file(&ledger_file);
        record(&sim, &dir.join(name), &ledger_file, 60, t)
            .with_context(|| format!("simulating {name}"))?;
        if backing == Backing::Eager {
            let snap_dir = dir.join(format!("{name}-snapshot"));
            LiveWriter::new(TreeWriter::new(&snap_dir)?, "ddp-peer-mirror")?
                .write(&sim.state_at(sim.busiest_t()))?;
            let mut sampler = Sampler::new(
                Root::open(&snap_dir)?,
                Scope::All,
                SamplerOptions::default(),
            );
            let seen = Observer::new(t.clone()).sample(&mut sampler)?;
            out.push_str(&format!(
                "=== Snapshot of run A at its plateau\n    gpuledger --root {}\n\n",
                snap_dir.display()
            ));
            out.push_str(&table::render_snapshot(&seen.ledger, &seen.findings));
        }
        files.push(ledger_file);
    }
    let a = RunSummary::of(&recording::open(&files[0])?);
    let b = RunSummary::of(&recording::open(&files[1])?);
    out.push_str(&format!(
        "\n=== Timeline of run A\n    gpuledger show {}\n\n",
        files[0].display()
    ));
    out.push_str(&show::render_text(&files[0].display().to_string(), &a));
    out.push_str(&format!(
        "\n=== Run A vs run B\n    gpuledger diff {} \\\n        {}\n\n",
        files[0].display(),
        files[1].display()
    ));
    out.push_str(&render_diff(
        &diff(&a, &b),
        "A-eager (26.22-like)",
        "B-deferred (26.05-like)",
    ));
    if keep.is_none() {
        out.push_str("\n(run `gpuledger demo -o DIR` to keep the trees and recordings)\n");
    }
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}
