//! `gpuledger show`: one recording, or several recordings of one job (one per node) as one job.

use super::recordings::open_all;
use super::{Ctx, UsageError};
use crate::cli::FilterArgs;
use anyhow::Result;
use gpuledger::outputs::{job_set, show};
use gpuledger::timeline::view::filter_summary;
use gpuledger::timeline::{JobSet, RunSummary};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, files: &[PathBuf], json: bool, filter: &FilterArgs) -> Result<ExitCode> {
    let filtered = !filter.pids.is_empty() || !filter.devices.is_empty();
    let runs = open_all(files, "show")?;
    let text = match runs.as_slice() {
        [(name, rec)] => {
            let summary = filter_summary(&RunSummary::of(rec), &filter.pids, &filter.devices)?;
            if json {
                show::render_json(&summary)
            } else {
                show::render_text_painted(name, &summary, ctx.paint)
            }
        }
        // Pids and device slots repeat across nodes: a filter over a job set would be ambiguous.
        _ if filtered => {
            return Err(UsageError(
                "show --pid/--device filters one recording; give a single node's recording".into(),
            )
            .into())
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
