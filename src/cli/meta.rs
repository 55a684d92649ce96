//! `completions` and `man`: the command line describing itself.

use clap::Args;
use std::path::PathBuf;

/// `completions` options.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `man` options.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into DIR instead (gpuledger.1, gpuledger-record.1, …).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
