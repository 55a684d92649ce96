//! `report` options and plan.

use super::{recordings_exist, Globals, OutputArgs};
use anyhow::Result;
use clap::{Args, ValueEnum};
use gpuledger::report::Template;
use std::path::{Path, PathBuf};

/// Report templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TemplateArg {
    /// intel/compute-runtime's Linux GPU driver issue form.
    IntelComputeRuntime,
    /// Any driver or runtime.
    Generic,
}

/// `report` options.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Zero, one or two runs (A = bad, B = good), each a recording or a directory of one
    /// job's recordings (one per node: the worst node is quoted, every node is listed).
    #[arg(value_name = "RECORDING|DIR", num_args = 0..=2)]
    pub recordings: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Report template.
    #[arg(long, value_enum, default_value = "intel-compute-runtime")]
    pub template: TemplateArg,
    /// Hide the hostname and user names too (secrets in command lines and the environment are
    /// always hidden).
    #[arg(long)]
    pub redact: bool,
    /// List every finding; by default more than four of one kind and severity are one line.
    /// JSON always lists each.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

/// A checked `report`.
#[derive(Debug, Clone)]
pub struct ReportPlan {
    /// The runs to describe.
    pub recordings: Vec<PathBuf>,
    /// The file to write; `None` for standard output.
    pub output: Option<PathBuf>,
    /// The template.
    pub template: Template,
    /// `--redact`.
    pub redact: bool,
    /// `-v`: every finding on a line of its own.
    pub verbose: bool,
}

impl ReportArgs {
    /// The plan: an existing output file is refused unless `--force`.
    pub fn plan(&self, _: &Globals) -> Result<ReportPlan> {
        recordings_exist("report", &self.recordings)?;
        let output = match &self.output.output {
            Some(p) if p == Path::new("-") => None,
            Some(p) => {
                self.output.refuse_existing(p)?;
                Some(p.clone())
            }
            None => None,
        };
        Ok(ReportPlan {
            recordings: self.recordings.clone(),
            output,
            template: match self.template {
                TemplateArg::IntelComputeRuntime => Template::IntelComputeRuntime,
                TemplateArg::Generic => Template::Generic,
            },
            redact: self.redact,
            verbose: self.verbose,
        })
    }
}
