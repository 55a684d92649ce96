//! Recording arguments: a file, or a directory holding one job's recordings (one per node, as the
//! Slurm prolog leaves them), expanded to its `*.ledger` files in name order. `show` and `diff`
//! merge a job's nodes; `plot` and `report` draw and quote its worst node and list every node.

use anyhow::{bail, Context, Result};
use gpuledger::recording::{self, Recording};
use gpuledger::timeline::JobSet;
use std::path::{Path, PathBuf};

/// The recordings named by `paths`, each with the name it is shown under.
pub fn open_all(paths: &[PathBuf], what: &str) -> Result<Vec<(String, Recording)>> {
    let mut out = Vec::new();
    for p in paths {
        for file in expand(p)? {
            let rec = recording::open(&file).with_context(|| what.to_string())?;
            if rec.not_closed {
                eprintln!(
                    "gpuledger: {} was not closed cleanly (a -wal file lies beside it: its recorder was killed or is still writing); read from a private copy, its last seconds may be missing",
                    gpuledger::outputs::safe_text::safe(&file.display().to_string())
                );
            }
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

/// One run of `plot` or `report`: a recording, or a directory of one job's recordings whose
/// worst node stands for the job (the whole set is kept for the nodes table).
pub struct RunArg {
    /// What the run is called on the page or in the report.
    pub name: String,
    /// The recording drawn or quoted.
    pub rec: Recording,
    /// The job's recordings, when the argument named more than one.
    pub set: Option<JobSet>,
}

/// Opens one run argument.
pub fn open_run(path: &Path, what: &str) -> Result<RunArg> {
    let mut runs = open_all(&[path.to_path_buf()], what)?;
    if runs.len() == 1 {
        let (name, rec) = runs.remove(0);
        return Ok(RunArg {
            name,
            rec,
            set: None,
        });
    }
    let set = JobSet::of(&runs);
    let worst = set.worst_node().map(|n| n.file.clone()).unwrap_or_default();
    let at = runs.iter().position(|(f, _)| *f == worst).unwrap_or(0);
    let (file, rec) = runs.swap_remove(at);
    let node = set
        .nodes
        .iter()
        .find(|n| n.file == file)
        .map(|n| n.node.clone())
        .unwrap_or_default();
    Ok(RunArg {
        name: format!(
            "{} (node {node}, the worst of {} nodes)",
            path.display(),
            set.nodes.len()
        ),
        rec,
        set: Some(set),
    })
}
