//! `completions` and `man`: the command line describing itself.

use crate::cli::Cli;
use anyhow::{Context, Result};
use clap::CommandFactory;
use std::path::Path;
use std::process::ExitCode;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gpuledger", &mut out);
    super::print(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page, or writes one per command into `dir`.
pub fn man(dir: Option<&Path>) -> Result<ExitCode> {
    let Some(dir) = dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(Cli::command()).render(&mut out)?;
        super::print(&String::from_utf8_lossy(&out))?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(dir)
        .and_then(|()| clap_mangen::generate_to(Cli::command(), dir))
        .with_context(|| format!("cannot write man pages into {}", dir.display()))?;
    eprintln!(
        "wrote the man pages into {} (man -l {}/gpuledger-record.1)",
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
