//! `gpuledger show`: one recording, or several recordings of one job (one per node) as one job.

use super::recordings::open_all;
use crate::cli::{Format, Globals, ShowPlan, UsageError};
use anyhow::Result;
use gpuledger::findings::Severity;
use gpuledger::outputs::{calls_compare, csv_views, job_set, show, show_calls};
use gpuledger::timeline::view::filter_summary;
use gpuledger::timeline::{JobSet, RunSummary};
use std::process::ExitCode;

/// Runs `show`'s plan.
pub fn run(g: &Globals, plan: ShowPlan) -> Result<ExitCode> {
    let (files, filter) = (&plan.files, &plan.filter);
    let json = plan.format == Format::Json;
    let runs = open_all(files, "show")?;
    let (text, worst) = match runs.as_slice() {
        [(name, rec)] => {
            let summary = filter_summary(&RunSummary::of(rec), &filter.pids, &filter.devices)?;
            let text = if plan.format == Format::Csv {
                csv_views::show(&[(name.as_str(), &summary)])?
            } else if json {
                with_calls_json(show::render_json(&summary), &summary)?
            } else {
                let mut text = show::render_text_detail(name, &summary, g.paint, plan.verbose);
                if let Some(c) = &summary.calls {
                    let width = g.paint.width;
                    text.push_str(&show_calls::render_calls(c, width));
                    text.push_str(&calls_compare::render_checks(&summary.call_checks, width));
                }
                text
            };
            (text, worst(&summary))
        }
        // Pids and device slots repeat across nodes: a filter over a job set would be ambiguous.
        _ if filter.is_set() => {
            return Err(UsageError(
                "show --pid/--device filters one recording; give a single node's recording".into(),
            )
            .into())
        }
        _ => {
            let set = JobSet::of(&runs);
            let text = if plan.format == Format::Csv {
                let runs: Vec<(&str, &RunSummary)> = set
                    .nodes
                    .iter()
                    .map(|n| (n.node.as_str(), &n.summary))
                    .collect();
                csv_views::show(&runs)?
            } else if json {
                job_set::render_json(&set)
            } else {
                job_set::render_text_detail(&set, g.paint, plan.verbose)
            };
            (text, worst(&set.merged()))
        }
    };
    super::print(&text)?;
    Ok(super::fail_on(worst, plan.fail_on))
}

/// The worst severity a recording saw: its findings at their worst over time, and its timeline
/// findings.
fn worst(s: &RunSummary) -> Option<Severity> {
    let recorded = s.findings.iter().map(|f| f.worst_severity);
    recorded
        .chain(s.timeline.iter().map(|f| f.finding.severity))
        .max()
}

/// The JSON of `show` with the traced calls under `calls` and the counters against them under
/// `call_checks` (both absent when not traced).
fn with_calls_json(json: String, summary: &RunSummary) -> Result<String> {
    let Some(c) = &summary.calls else {
        return Ok(json);
    };
    let mut v: serde_json::Value = serde_json::from_str(&json)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("calls".into(), serde_json::to_value(c)?);
        o.insert(
            "call_checks".into(),
            serde_json::to_value(&summary.call_checks)?,
        );
    }
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}
