//! The gpuledger binary: parses the command line, dispatches, reports errors with their chain.

mod cli;
mod commands;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match commands::run(args) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("gpuledger: {err:#}");
            ExitCode::from(exit_status(&err))
        }
    }
}

/// 2 for a usage error (as clap exits for its own), 1 for anything that went wrong at run time.
fn exit_status(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<commands::UsageError>().is_some() {
        2
    } else {
        1
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
