//! The gpuledger binary: parses the command line, dispatches, reports errors with their chain.

mod cli;
mod commands;
mod help_text;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        // Usage errors quote the value given; like every error they are printed escaped.
        Err(e) if e.use_stderr() => {
            eprint!("{}", printable(&e.render().to_string()));
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
        Err(e) => e.exit(),
    };
    match commands::run(args) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("gpuledger: {}", printable(&format!("{err:#}")));
            ExitCode::from(exit_status(&err))
        }
    }
}

/// The message with control characters escaped, line by line: causes quote bytes from hostile
/// input (a tar header's name in a library's error), and a terminal must not obey them.
fn printable(message: &str) -> String {
    message
        .split('\n')
        .map(gpuledger::outputs::safe_text::display_safe)
        .collect::<Vec<_>>()
        .join("\n")
}

/// 2 for a usage error (as clap exits for its own), 1 for anything that went wrong at run time.
fn exit_status(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<cli::UsageError>().is_some() {
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
