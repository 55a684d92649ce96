//! `gpuledger plot`: one or two runs as a self-contained HTML page.

use crate::cli::PlotPlan;
use anyhow::{Context, Result};
use std::process::ExitCode;

/// Runs `plot`; the plan has refused an existing output without --force.
pub fn run(plan: PlotPlan) -> Result<ExitCode> {
    let runs = plan
        .recordings
        .iter()
        .map(|f| super::recordings::open_run(f, "plot"))
        .collect::<Result<Vec<_>>>()?;
    let (recs, sets): (Vec<_>, Vec<_>) = runs.into_iter().map(|r| ((r.name, r.rec), r.set)).unzip();
    let sets: Vec<_> = sets.iter().map(Option::as_ref).collect();
    let html = gpuledger::outputs::plot::render_html(&recs, &sets);
    let output = &plan.output;
    std::fs::write(output, html).with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "wrote {} (self-contained: open it in any browser)",
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}
