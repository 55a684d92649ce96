//! `gpuledger demo`: the seed's regression, proven in the simulator in a few seconds.
//!
//! The runs are named for what the driver does with peer registrations: `A-pinned` (26.22-like,
//! `EnableDeferBacking=1`) and `B-registered-only` (26.05-like, `EnableDeferBacking=0`). Earlier
//! releases named them `A-eager` and `B-deferred`, the reverse of the driver's switch; a kept
//! directory gets those names as symlinks to the new ones, so scripts that read them still work.

use anyhow::{Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::observe::Observer;
use gpuledger::outputs::diff::render_diff_fit;
use gpuledger::outputs::text_table::Paint;
use gpuledger::outputs::{show, table};
use gpuledger::recording;
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sim::{run::record, Backing, LiveWriter, Scenario, SimParams, Simulation};
use gpuledger::timeline::diff::diff;
use gpuledger::timeline::RunSummary;
use gpuledger::tree_writer::TreeWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The two runs: file-name stem, the name earlier releases gave it, and its backing.
const RUNS: [(&str, &str, Backing); 2] = [
    ("A-pinned", "A-eager", Backing::Pinned),
    ("B-registered-only", "B-deferred", Backing::RegisteredOnly),
];

/// Runs the demo, keeping its files in `keep` when given; its text drawn as `paint` says.
pub fn run(keep: Option<&Path>, t: &Thresholds, paint: Paint) -> Result<ExitCode> {
    let tmp = tempfile::tempdir()?;
    let dir = keep.unwrap_or(tmp.path());
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut out = String::from(
        "gpuledger demo: a 2-rank PyTorch DDP job on 2× Intel Arc Pro B70 (xe),\n\
simulated twice:\n\
  A = compute-runtime 26.22 behaviour: EnableDeferBacking=1 (the default on Battlemage\n\
      since 26.09) backs every peer registration with pinned host pages\n\
  B = 26.05 behaviour, or NEOReadDebugKeys=1 EnableDeferBacking=0: the same registrations,\n\
      not backed (bookkeeping only)\n\n",
    );
    let mut files = Vec::new();
    for (name, _, backing) in RUNS {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.backing = backing;
        let sim = Simulation::new(p);
        let ledger_file = dir.join(format!("{name}.ledger"));
        let _ = std::fs::remove_file(&ledger_file);
        record(&sim, &dir.join(name), &ledger_file, 60, t)
            .with_context(|| format!("simulating {name}"))?;
        if backing == Backing::Pinned {
            out.push_str(&plateau_snapshot(
                &sim,
                &dir.join(format!("{name}-snapshot")),
                t,
                paint,
            )?);
        }
        files.push(ledger_file);
    }
    let a = RunSummary::of(&recording::open(&files[0])?);
    let b = RunSummary::of(&recording::open(&files[1])?);
    out.push_str(&format!(
        "\n=== Timeline of run A\n    gpuledger show {}\n\n",
        files[0].display()
    ));
    out.push_str(&show::render_text_painted(
        &files[0].display().to_string(),
        &a,
        paint,
    ));
    out.push_str(&format!(
        "\n=== Run A vs run B\n    gpuledger diff {} \\\n        {}\n\n",
        files[0].display(),
        files[1].display()
    ));
    out.push_str(&render_diff_fit(
        &diff(&a, &b),
        "A-pinned (26.22-like, EnableDeferBacking=1)",
        "B-registered-only (26.05-like, EnableDeferBacking=0)",
        paint.width,
    ));
    match keep {
        Some(dir) => link_old_names(dir)?,
        None => out.push_str("\n(run `gpuledger demo -o DIR` to keep the trees and recordings)\n"),
    }
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes run A's tree at its plateau into `snap_dir` and returns its snapshot table.
fn plateau_snapshot(
    sim: &Simulation,
    snap_dir: &Path,
    t: &Thresholds,
    paint: Paint,
) -> Result<String> {
    LiveWriter::new(TreeWriter::new(snap_dir)?, "ddp-peer-mirror")?
        .write(&sim.state_at(sim.busiest_t()))?;
    let mut sampler = Sampler::new(Root::open(snap_dir)?, Scope::All, SamplerOptions::default());
    let seen = Observer::new(t.clone()).sample(&mut sampler)?;
    Ok(format!(
        "=== Snapshot of run A at its plateau\n    gpuledger --root {}\n\n{}",
        snap_dir.display(),
        table::render_snapshot_painted(&seen.ledger, &seen.findings, paint)
    ))
}

/// The kept files under their earlier names, as relative symlinks to the new ones: the tree,
/// the recording and (run A) the plateau snapshot. What an earlier demo left under an old name
/// (its own files: a recording, a tree) is replaced; removal does not follow symlinks.
fn link_old_names(dir: &Path) -> Result<()> {
    for (name, old, backing) in RUNS {
        let mut pairs = vec![
            (name.to_string(), old.to_string()),
            (format!("{name}.ledger"), format!("{old}.ledger")),
        ];
        if backing == Backing::Pinned {
            pairs.push((format!("{name}-snapshot"), format!("{old}-snapshot")));
        }
        for (new, old) in pairs {
            let link: PathBuf = dir.join(&old);
            replace_with_link(&link, Path::new(&new))
                .with_context(|| format!("cannot link {} to {new}", link.display()))?;
        }
    }
    Ok(())
}

/// `link` becomes a symlink to `target` (relative to the link's directory).
fn replace_with_link(link: &Path, target: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(link) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(link)?,
        Ok(_) => std::fs::remove_file(link)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::os::unix::fs::symlink(target, link)
}
