//! Recording arguments: a file, or a directory holding one job's recordings (one per node, as the
//! Slurm prolog leaves them), expanded to its `*.ledger` files in name order.

use anyhow::{bail, Context, Result};
use gpuledger::recording::{self, Recording};
use std::path::{Path, PathBuf};

/// The recordings named by `paths`, each with the name it is shown under.
pub fn open_all(paths: &[PathBuf], what: &str) -> Result<Vec<(String, Recording)>> {
    let mut out = Vec::new();
    for p in paths {
        for file in expand(p)? {
            let rec = recording::open(&file).with_context(|| what.to_string())?;
            out.push((file.display().to_string(), rec));
        }
    }
    Ok(out)
}

fn expand(p: &Path) -> Result<Vec<PathBuf>> {
    if !p.is_dir() {
        return Ok(vec![p.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(p)
        .with_context(|| format!("cannot list {}", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "ledger") && f.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(
            "{} holds no *.ledger recordings; give recording files or a directory of them",
            p.display()
        );
    }
    Ok(files)
}
