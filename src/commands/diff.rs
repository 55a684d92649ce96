//! `gpuledger diff`: two runs, each one recording or one job's recordings (a set of nodes).

use super::recordings::open_all;
use crate::cli::{DiffPlan, Format};
use anyhow::Result;
use gpuledger::outputs::diff::{render_diff_fit, render_json};
use gpuledger::timeline::diff::diff;
use gpuledger::timeline::JobSet;
use std::process::ExitCode;

/// Runs `diff`'s plan, text `width` columns wide; `--fail-on` looks at both runs' peer-mirror
/// findings.
pub fn run(plan: DiffPlan, width: usize) -> Result<ExitCode> {
    let (a, b) = (&plan.a, &plan.b);
    let ra = JobSet::of(&open_all(&[a.to_path_buf()], "diff, run A")?);
    let rb = JobSet::of(&open_all(&[b.to_path_buf()], "diff, run B")?);
    let d = diff(&ra.merged(), &rb.merged());
    if plan.format == Format::Csv {
        super::print(&gpuledger::outputs::csv_views::diff(&d)?)?;
    } else if plan.format == Format::Json {
        super::print(&render_json(&d))?;
    } else {
        let mut text = String::new();
        for (name, set) in [("A", &ra), ("B", &rb)] {
            if let Some(w) = &set.warning {
                text.push_str(&format!("warning: run {name}: {w}\n"));
            }
        }
        text.push_str(&render_diff_fit(
            &d,
            &a.display().to_string(),
            &b.display().to_string(),
            width,
        ));
        super::print(&text)?;
    }
    let worst = d
        .peer_mirrors
        .iter()
        .flatten()
        .map(|f| f.worst_severity)
        .max();
    Ok(super::fail_on(worst, plan.fail_on))
}
