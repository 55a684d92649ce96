//! `gpuledger show`.

use super::Ctx;
use crate::cli::FilterArgs;
use anyhow::{Context, Result};
use gpuledger::outputs::show;
use gpuledger::recording;
use gpuledger::timeline::view::filter_summary;
use gpuledger::timeline::RunSummary;
use std::path::Path;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, file: &Path, json: bool, filter: &FilterArgs) -> Result<ExitCode> {
    let rec = recording::open(file).context("show")?;
    let summary = filter_summary(&RunSummary::of(&rec), &filter.pids, &filter.devices)?;
    if json {
        super::print(&show::render_json(&summary))?;
    } else {
        super::print(&show::render_text_painted(
            &file.display().to_string(),
            &summary,
            ctx.paint,
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
