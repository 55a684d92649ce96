//! `plot` options and plan.

use super::{recordings_exist, Globals, OutputArgs};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Where `plot` writes without `-o`.
pub const DEFAULT_PLOT: &str = "gpuledger-plot.html";

/// `plot` options.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// One or two runs, each a recording or a directory of one job's recordings (one per
    /// node: the worst node is drawn, every node is listed).
    #[arg(value_name = "RECORDING|DIR", num_args = 1..=2, required = true)]
    pub recordings: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A checked `plot`.
#[derive(Debug, Clone)]
pub struct PlotPlan {
    /// The runs to draw.
    pub recordings: Vec<PathBuf>,
    /// The HTML file to write.
    pub output: PathBuf,
}

impl PlotArgs {
    /// The plan: an existing output file is refused unless `--force`.
    pub fn plan(&self, _: &Globals) -> Result<PlotPlan> {
        recordings_exist("plot", &self.recordings)?;
        Ok(PlotPlan {
            recordings: self.recordings.clone(),
            output: self.output.fresh_file(DEFAULT_PLOT)?,
        })
    }
}
