//! `gpuledger show`.

use anyhow::{Context, Result};
use gpuledger::outputs::show;
use gpuledger::{recording, timeline};
use std::path::Path;
use std::process::ExitCode;

pub fn run(file: &Path, json: bool) -> Result<ExitCode> {
    let rec = recording::open(file).context("show")?;
    let found = timeline::analyze(&rec);
    if json {
        super::print(&show::render_json(&rec, &found))?;
    } else {
        super::print(&show::render_text(
            &file.display().to_string(),
            &rec,
            &found,
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
