//! `gpuledger capture`.

use crate::cli::{CapturePlan, Globals, OutputExists};
use anyhow::{Context, Result};
use gpuledger::redact::Cmdlines;
use std::path::Path;
use std::process::ExitCode;

/// Runs `capture`.
pub fn run(g: &Globals, plan: CapturePlan) -> Result<ExitCode> {
    let (output, force) = (plan.output.as_path(), plan.force);
    if !force && occupied(output) {
        // Exit 1 like `record` and `simulate` refusing theirs: the flags are fine, the file is there.
        return Err(OutputExists {
            path: output.to_path_buf(),
        }
        .into());
    }
    if force && output.is_dir() {
        // A forced capture tree replaces the old one instead of mixing with its pids.
        gpuledger::tree_writer::TreeWriter::fresh(output, true).context("-o")?;
    }
    let root = g.open_root()?;
    let summary = gpuledger::capture::capture(root, plan.pids, plan.cmdlines, output)
        .with_context(|| format!("capture to {}", output.display()))?;
    eprintln!(
        "wrote {}: {} GPU processes, {} DRM fds, {} devices (environment allow-listed{}; read it back with --root {})",
        output.display(),
        summary.processes,
        summary.drm_fds,
        summary.devices,
        match plan.cmdlines {
            Cmdlines::Redacted => ", secrets in command lines redacted",
            Cmdlines::AsIs => "",
        },
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A file, or a directory with something in it: a capture would overwrite or mix with it. An
/// empty directory is a fine place for a capture tree.
fn occupied(output: &Path) -> bool {
    match std::fs::read_dir(output) {
        Ok(mut entries) => entries.next().is_some(),
        Err(_) => output.symlink_metadata().is_ok(),
    }
}
