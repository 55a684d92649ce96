//! `gpuledger diff`: two runs, each one recording or one job's recordings (a set of nodes).

use super::recordings::open_all;
use anyhow::Result;
use gpuledger::outputs::diff::render_diff;
use gpuledger::timeline::diff::diff;
use gpuledger::timeline::JobSet;
use std::path::Path;
use std::process::ExitCode;

pub fn run(a: &Path, b: &Path, json: bool) -> Result<ExitCode> {
    let ra = JobSet::of(&open_all(&[a.to_path_buf()], "diff, run A")?);
    let rb = JobSet::of(&open_all(&[b.to_path_buf()], "diff, run B")?);
    let d = diff(&ra.merged(), &rb.merged());
    if json {
        super::print(&(serde_json::to_string_pretty(&d)? + "\n"))?;
    } else {
        let mut text = String::new();
        for (name, set) in [("A", &ra), ("B", &rb)] {
            if let Some(w) = &set.warning {
                text.push_str(&format!("warning: run {name}: {w}\n"));
            }
        }
        text.push_str(&render_diff(
            &d,
            &a.display().to_string(),
            &b.display().to_string(),
        ));
        super::print(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}
