//! `gpuledger doctor`: examines the machine (and the job's environment) with the library's
//! [`gpuledger::doctor`], prints the report and exits 3 under `--fail-on` when it applies.

use crate::cli::{DoctorPlan, Format, Globals};
use anyhow::Result;
use gpuledger::findings;
use gpuledger::outputs::doctor::{render_json, render_text_fit};
use std::process::ExitCode;

/// Runs `doctor`'s plan.
pub fn run(g: &Globals, plan: DoctorPlan) -> Result<ExitCode> {
    let examined = gpuledger::doctor::DoctorPlan {
        thresholds: g.thresholds.clone(),
        command: plan.command.clone(),
        environ: std::env::vars().map(|(k, v)| format!("{k}={v}")).collect(),
        vram_per_rank: plan.vram_per_rank,
        since: plan.since,
        known_issues: plan.known_issues.clone(),
    };
    let report = gpuledger::doctor::examine(g.open_root()?, &examined)?;
    super::print(&match plan.format {
        Format::Json => render_json(&report),
        Format::Csv => gpuledger::outputs::csv_views::doctor(&report)?,
        Format::Table => render_text_fit(&report, g.paint.width),
    })?;
    Ok(super::fail_on(
        findings::worst(&report.findings),
        plan.fail_on,
    ))
}
