//! `gpuledger show`: one recording, or several recordings of one job (one per node) as one job.

use super::recordings::open_all;
use anyhow::Result;
use gpuledger::outputs::{job_set, show};
use gpuledger::timeline::{JobSet, RunSummary};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(files: &[PathBuf], json: bool) -> Result<ExitCode> {
    let runs = open_all(files, "show")?;
    let text = match runs.as_slice() {
        [(name, rec)] => {
            let summary = RunSummary::of(rec);
            if json {
                show::render_json(&summary)
            } else {
                show::render_text(name, &summary)
            }
        }
        _ => {
            let set = JobSet::of(&runs);
            if json {
                job_set::render_json(&set)
            } else {
                job_set::render_text(&set)
            }
        }
    };
    super::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
