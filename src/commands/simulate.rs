//! `gpuledger simulate`.

use crate::cli::SimulatePlan;
use anyhow::{Context, Result};
use gpuledger::sim::{LiveWriter, Simulation};
use gpuledger::tree_writer::TreeWriter;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Runs `simulate`.
pub fn run(plan: SimulatePlan) -> Result<ExitCode> {
    let scenario = plan.params.scenario;
    let live = plan.live;
    let sim = Simulation::new(plan.params);
    let tree = TreeWriter::fresh(&plan.output, plan.force).context("-o")?;
    let mut writer =
        LiveWriter::new(tree, scenario.name()).context("writing the simulated tree")?;
    let Some(d) = live else {
        let t = plan
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
            None if plan.at.is_some() => format!("{t:.1} s of {:.0} s", sim.params().duration_s),
            None => format!("{t:.1} s of {:.0} s, the plateau", sim.params().duration_s),
        };
        eprintln!(
            "wrote {} ({}, {moment}): read it with gpuledger --root {}",
            plan.output.display(),
            scenario.name(),
            plan.output.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    eprintln!(
        "simulating {} live in {} for {:.0} s",
        scenario.name(),
        plan.output.display(),
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
