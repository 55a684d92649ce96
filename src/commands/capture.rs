//! `gpuledger capture`.

use super::Ctx;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, output: &Path, pids: Vec<u32>, force: bool) -> Result<ExitCode> {
    if !force && occupied(output) {
        // Exit 1 like `record` and `simulate` refusing theirs: the flags are fine, the file is there.
        bail!(
            "{} already exists; choose another -o, or pass --force to overwrite it",
            output.display()
        );
    }
    if force && output.is_dir() {
        // A forced capture tree replaces the old one instead of mixing with its pids.
        gpuledger::tree_writer::TreeWriter::fresh(output, true).context("-o")?;
    }
    let root = ctx.open_root()?;
    let pids = (!pids.is_empty()).then_some(pids);
    let summary = gpuledger::capture::capture(root, pids, output)
        .with_context(|| format!("capture to {}", output.display()))?;
    eprintln!(
        "wrote {}: {} GPU processes, {} DRM fds, {} devices (environment allow-listed; read it back with --root {})",
        output.display(),
        summary.processes,
        summary.drm_fds,
        summary.devices,
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
