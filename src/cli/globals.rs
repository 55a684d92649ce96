//! What every command gets from the global options, built once from the command line.

use super::{Cli, ColorArg, UsageError};
use anyhow::{Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::outputs::text_table::Paint;
use gpuledger::root::Root;
use std::io::IsTerminal;
use std::path::PathBuf;

/// The global options, applied.
#[derive(Debug, Clone)]
pub struct Globals {
    /// `--root`: a capture tree or archive instead of the live machine.
    pub root: Option<PathBuf>,
    /// `--proc`: the host's /proc mounted elsewhere (containers).
    pub proc_dir: Option<PathBuf>,
    /// Finding thresholds with every `--threshold` applied.
    pub thresholds: Thresholds,
    /// Whether text output is coloured (`--color`, NO_COLOR, CLICOLOR_FORCE, a terminal).
    pub paint: Paint,
}

impl Globals {
    /// Applies the global options; the values were already checked by clap's value parsers.
    pub fn new(cli: &Cli) -> Result<Globals> {
        let mut thresholds = Thresholds::default();
        for a in &cli.thresholds {
            thresholds
                .set(a)
                .with_context(|| format!("in --threshold {a}"))?;
        }
        Ok(Globals {
            root: cli.root.clone(),
            proc_dir: cli.proc_dir.clone(),
            thresholds,
            paint: Paint {
                color: wants_color(cli.color),
                width: text_width(),
            },
        })
    }

    /// Whether the live machine is read (no `--root`).
    pub fn is_live(&self) -> bool {
        self.root.is_none()
    }

    /// Opens `--root` (or the live machine), reading /proc from `--proc` when given.
    pub fn open_root(&self) -> Result<Root> {
        let root = match &self.root {
            None => Root::live(),
            Some(p) => Root::open(p).context("in --root")?,
        };
        let Some(dir) = &self.proc_dir else {
            return Ok(root);
        };
        if !dir.join("self").exists() && !dir.join("1").exists() {
            return Err(UsageError(format!(
                "--proc {}: no procfs there (expected PATH/1 or PATH/self); mount the host's /proc, e.g. -v /proc:/host/proc:ro",
                dir.display()
            ))
            .into());
        }
        Ok(root.with_proc(dir))
    }
}

/// `--color`: always and never are final. auto: NO_COLOR (any non-empty value) disables;
/// CLICOLOR_FORCE (non-empty and not `0`; anstyle-query alone would take `0` as forcing) forces;
/// CLICOLOR=0 disables; else colour when stdout is a terminal whose TERM supports it.
fn wants_color(arg: ColorArg) -> bool {
    match arg {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => {
            let forced =
                std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0");
            if anstyle_query::no_color() {
                false
            } else if forced {
                true
            } else if anstyle_query::clicolor() == Some(false) {
                false
            } else {
                std::io::stdout().is_terminal() && anstyle_query::term_supports_color()
            }
        }
    }
}

/// Columns of text output: `COLUMNS` when set (as `ls` takes it), else the terminal's size on a
/// terminal (80 when it cannot be read); not folded when stdout is a pipe or a file, so every
/// finding is one line for grep, awk and logs.
fn text_width() -> usize {
    let out = std::io::stdout();
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0);
    if let Some(c) = columns {
        return c;
    }
    if !out.is_terminal() {
        return gpuledger::outputs::wrap::UNBOUNDED;
    }
    terminal_size::terminal_size_of(&out)
        .map(|(w, _)| usize::from(w.0))
        .unwrap_or(gpuledger::outputs::wrap::DEFAULT_WIDTH)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Globals for a plan test: no root, default thresholds, no colour.
    pub(crate) fn plain() -> Globals {
        Globals {
            root: None,
            proc_dir: None,
            thresholds: Thresholds::default(),
            paint: Paint {
                color: false,
                width: gpuledger::outputs::wrap::DEFAULT_WIDTH,
            },
        }
    }
}
