//! `gpuledger show`.

use anyhow::{Context, Result};
use gpuledger::outputs::show;
use gpuledger::recording;
use gpuledger::timeline::RunSummary;
use std::path::Path;
use std::process::ExitCode;

pub fn run(file: &Path, json: bool) -> Result<ExitCode> {
    let rec = recording::open(file).context("show")?;
    let summary = RunSummary::of(&rec);
    if json {
        super::print(&show::render_json(&summary))?;
    } else {
        super::print(&show::render_text(&file.display().to_string(), &summary))?;
    }
    Ok(ExitCode::SUCCESS)
}
