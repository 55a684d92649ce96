//! `gpuledger show`: one recording, or several recordings of one job (one per node) as one job.

use super::recordings::open_all;
use super::{Ctx, UsageError};
use crate::cli::FilterArgs;
use anyhow::Result;
use gpuledger::outputs::{job_set, show, show_calls};
use gpuledger::recording::CallTable;
use gpuledger::timeline::view::filter_summary;
use gpuledger::timeline::{JobSet, RunSummary};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(
    ctx: &Ctx,
    files: &[PathBuf],
    json: bool,
    verbose: bool,
    filter: &FilterArgs,
) -> Result<ExitCode> {
    let filtered = !filter.pids.is_empty() || !filter.devices.is_empty();
    let runs = open_all(files, "show")?;
    let text = match runs.as_slice() {
        [(name, rec)] => {
            let summary = filter_summary(&RunSummary::of(rec), &filter.pids, &filter.devices)?;
            let calls = gpuledger::recording::calls(&files[0])?;
            if json {
                with_calls_json(show::render_json(&summary), calls.as_ref())?
            } else {
                let mut text = show::render_text_detail(name, &summary, ctx.paint, verbose);
                if let Some(c) = &calls {
                    text.push_str(&show_calls::render_calls(c));
                }
                text
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
                job_set::render_text_detail(&set, ctx.paint, verbose)
            }
        }
    };
    super::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The JSON of `show` with the traced calls under `calls` (absent when not traced).
fn with_calls_json(json: String, calls: Option<&CallTable>) -> Result<String> {
    let Some(c) = calls else {
        return Ok(json);
    };
    let mut v: serde_json::Value = serde_json::from_str(&json)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("calls".into(), serde_json::to_value(c)?);
    }
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}
