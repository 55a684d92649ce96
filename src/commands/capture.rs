//! `gpuledger capture`.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: Option<&Path>, output: &Path, pids: Vec<u32>) -> Result<ExitCode> {
    let root = super::open_root(root)?;
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
