//! `gpuledger simulate`.

use crate::cli::{BackingArg, SimulateArgs};
use anyhow::{Context, Result};
use gpuledger::sim::{Backing, LiveWriter, SimParams, Simulation};
use gpuledger::tree_writer::TreeWriter;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Runs `simulate`; clap has checked the scenario, the rank range and the sizes.
pub fn run(args: &SimulateArgs) -> Result<ExitCode> {
    let scenario = args.scenario;
    let mut p = SimParams::new(scenario);
    if let Some(r) = args.ranks {
        p.ranks = r;
    }
    p.backing = match args.backing {
        BackingArg::Eager => Backing::Eager,
        BackingArg::Deferred => Backing::Deferred,
    };
    p.host_mem = args.host_mem;
    if !args.segments.is_empty() {
        p.segments = args.segments.clone();
    }
    p.gpu_accounting = !args.no_gpu_accounting;
    p.visibility = args.visible;
    p.apply_env(|k| std::env::var(k).ok());
    let live = args.live;
    if let Some(d) = live {
        p.duration_s = d.as_secs_f64().max(1.0);
    }
    let sim = Simulation::new(p);
    let tree = TreeWriter::fresh(&args.out, args.force).context("--out")?;
    let mut writer =
        LiveWriter::new(tree, scenario.name()).context("writing the simulated tree")?;
    let Some(d) = live else {
        let t = args
            .at
            .map_or_else(|| sim.snapshot_t(), |at| at.as_secs_f64());
        writer
            .write(&sim.state_at(t))
            .context("writing the simulated tree")?;
        let moment = match sim.death_t() {
            Some(death) if t < death => format!(
                "{t:.1} s of {:.0} s, before the job dies at {death:.1} s",
                sim.params().duration_s
            ),
            Some(_) => format!(
                "the moment the job died at {t:.1} s of {:.0} s, host RAM exhausted: \
                 its processes are gone, the evidence is in dev/kmsg and gpuledger-sim/job.json",
                sim.params().duration_s
            ),
            None if args.at.is_some() => format!("{t:.1} s of {:.0} s", sim.params().duration_s),
            None => format!("{t:.1} s of {:.0} s, the plateau", sim.params().duration_s),
        };
        eprintln!(
            "wrote {} ({}, {moment}): read it with gpuledger --root {}",
            args.out.display(),
            scenario.name(),
            args.out.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    eprintln!(
        "simulating {} live in {} for {:.0} s",
        scenario.name(),
        args.out.display(),
        d.as_secs_f64()
    );
    let start = Instant::now();
    loop {
        let t = start.elapsed();
        writer
            .write(&sim.state_at(t.as_secs_f64()))
            .context("rewriting the simulated tree")?;
        if t >= d {
            break;
        }
        std::thread::sleep(Duration::from_millis(100).min(d - t));
    }
    Ok(ExitCode::SUCCESS)
}
