//! The flag groups several commands share, defined once: `-o/--output` with `--force` (the one
//! overwrite policy), `--format`/`--json`/`--fail-on` (the reporting vocabulary), and
//! `--pid`/`--device` (what a view shows), `--trace`/`--no-trace` (API tracing of a started
//! command).

use super::UsageError;
use clap::{Args, ValueEnum};
use gpuledger::findings::Severity;
use gpuledger::recording::trace::{self, TracePlan};
use std::path::{Path, PathBuf};

/// `-o/--output` and `--force`: where a command writes, refused when something is there unless
/// `--force` says to replace it.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// Output file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing output; without it, an existing one is refused.
    #[arg(long)]
    pub force: bool,
}

/// An output that exists and `--force` was not given: exit 1 (the flags are fine, the file is
/// there), as `record` and `capture` always did.
#[derive(Debug, thiserror::Error)]
#[error("{} already exists; choose another -o, or add --force to overwrite it", path.display())]
pub struct OutputExists {
    /// The output.
    pub path: PathBuf,
}

/// Refuses a recording argument that is not there, so that a missing input is the error said
/// first (before an existing output file).
pub fn recordings_exist(command: &str, paths: &[PathBuf]) -> anyhow::Result<()> {
    for p in paths {
        if let Err(e) = std::fs::symlink_metadata(p) {
            anyhow::bail!("{command}: cannot read recording {}: {e}", p.display());
        }
    }
    Ok(())
}

impl OutputArgs {
    /// The output given (or `default`), refused when a file is there and `--force` is not given.
    pub fn fresh_file(&self, default: &str) -> Result<PathBuf, OutputExists> {
        let path = self
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from(default));
        self.refuse_existing(&path)?;
        Ok(path)
    }

    /// Refuses `path` when something is there and `--force` is not given.
    pub fn refuse_existing(&self, path: &Path) -> Result<(), OutputExists> {
        if !self.force && path.symlink_metadata().is_ok() {
            return Err(OutputExists {
                path: path.to_path_buf(),
            });
        }
        Ok(())
    }
}

/// Output formats of the reporting commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables for people.
    Table,
    /// A JSON document with a `schema` field (the snapshot's --loop: one per line).
    Json,
    /// One table of rows, header first, numbers without units (like nvidia-smi
    /// --format=csv,nounits): the snapshot's process × device × region rows, show's peaks,
    /// diff's compared values, doctor's findings and known-issue entries.
    Csv,
}

/// Severity for --fail-on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Warning or critical.
    Warning,
    /// Critical only.
    Critical,
}

impl FailOn {
    /// The least severity that fails.
    pub fn severity(self) -> Severity {
        match self {
            FailOn::Warning => Severity::Warning,
            FailOn::Critical => Severity::Critical,
        }
    }
}

/// `--format`, `--json` and `--fail-on`: how a reporting command prints, and when it exits 3.
#[derive(Debug, Clone, Args)]
pub struct FormatArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "table", value_name = "FORMAT")]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Exit with status 3 when a finding of this severity or worse is shown.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
}

impl FormatArgs {
    /// The format asked for (`--json` is `--format json`).
    pub fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }

    /// The least severity that makes the command exit 3.
    pub fn fail_on(&self) -> Option<Severity> {
        self.fail_on.map(FailOn::severity)
    }
}

/// Exit status when `--fail-on` matched.
pub const EXIT_FINDING: u8 = 3;

/// `--pid` and `--device`: which processes and devices a view shows. Findings are computed on
/// the whole machine (or recording) first; those about other pids and devices are then hidden,
/// so a filter never changes a verdict.
#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Show only these pids (repeat, or comma-separate). A pid that holds no GPU memory or GPU fd
    /// is an error (exit 1). Findings are judged on the whole machine, then those about other
    /// pids and devices are hidden: a filter never changes a verdict.
    #[arg(long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// Show only these devices: a PCI slot (0000:03:00.0), a DRM minor (card1, renderD129) or an
    /// index in the device table's order (0..N). No such device is an error (exit 1).
    #[arg(
        long = "device",
        visible_alias = "id",
        value_name = "ID",
        value_delimiter = ','
    )]
    pub devices: Vec<String>,
}

impl FilterArgs {
    /// Whether a pid or a device was given.
    pub fn is_set(&self) -> bool {
        !self.pids.is_empty() || !self.devices.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_flag_is_format_json() {
        let args = |format, json| FormatArgs {
            format,
            json,
            fail_on: None,
        };
        assert_eq!(args(Format::Table, true).format(), Format::Json);
        assert_eq!(args(Format::Csv, false).format(), Format::Csv);
    }

    #[test]
    fn an_existing_output_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let there = dir.path().join("report.md");
        std::fs::write(&there, "old").unwrap();
        let mut out = OutputArgs {
            output: Some(there.clone()),
            force: false,
        };
        let err = out.fresh_file("unused").unwrap_err().to_string();
        assert!(
            err.ends_with("already exists; choose another -o, or add --force to overwrite it"),
            "{err}"
        );
        out.force = true;
        assert_eq!(out.fresh_file("unused").unwrap(), there);
        let new = dir.path().join("new.md");
        let out = OutputArgs {
            output: None,
            force: false,
        };
        assert!(out.fresh_file(new.to_str().unwrap()).is_ok());
    }
}

/// `--trace`/`--no-trace`: whether a started command's GPU memory API calls are traced.
#[derive(Debug, Clone, Default, Args)]
pub struct TraceArgs {
    /// Trace the command's GPU memory API calls (which call allocated, pinned or registered
    /// which bytes): the default when libgpuledger_tracer.so is beside gpuledger (or in
    /// GPULEDGER_TRACER) and the job sets no CUDA_INJECTION64_PATH of its own; given
    /// explicitly, a job that cannot be traced is an error.
    #[arg(long, overrides_with = "no_trace")]
    pub trace: bool,
    /// Do not trace the command's API calls.
    #[arg(long, overrides_with = "trace")]
    pub no_trace: bool,
}

impl TraceArgs {
    /// Whether to trace `command` (empty: an attach mode) on the live machine (`live`);
    /// `--trace` that cannot be honoured is refused.
    pub fn plan(&self, command: &[String], live: bool) -> Result<TracePlan, UsageError> {
        let exe = std::env::current_exe().ok();
        let plan = trace::plan(
            !self.no_trace,
            live,
            command,
            |k| std::env::var(k).ok(),
            exe.as_deref().and_then(Path::parent),
        );
        match &plan {
            TracePlan::Off(why) if self.trace => {
                Err(UsageError(format!("--trace: cannot trace: {why}")))
            }
            _ => Ok(plan),
        }
    }
}
