//! `gpuledger diff`.

use anyhow::{Context, Result};
use gpuledger::recording;
use gpuledger::timeline::diff::{diff, render_diff};
use gpuledger::timeline::RunSummary;
use std::path::Path;
use std::process::ExitCode;

pub fn run(a: &Path, b: &Path, json: bool) -> Result<ExitCode> {
    let ra = recording::open(a).context("diff, run A")?;
    let rb = recording::open(b).context("diff, run B")?;
    let d = diff(&RunSummary::of(&ra), &RunSummary::of(&rb));
    if json {
        super::print(&(serde_json::to_string_pretty(&d)? + "\n"))?;
    } else {
        super::print(&render_diff(
            &d,
            &a.display().to_string(),
            &b.display().to_string(),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
