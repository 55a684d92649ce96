//! `show` and `diff` options and plans.

use super::{FilterArgs, Format, FormatArgs, Globals, UsageError};
use anyhow::Result;
use clap::Args;
use gpuledger::findings::Severity;
use std::path::PathBuf;

/// `show` options.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The recording; several recordings (or a directory of them) of one job, one per node,
    /// are shown as one job: per-rank peaks across nodes, the worst node, findings by node.
    #[arg(required = true, value_name = "RECORDING|DIR")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// List every finding; by default more than four of one kind and severity are one line.
    /// JSON always lists each.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

/// A checked `show`.
#[derive(Debug, Clone)]
pub struct ShowPlan {
    /// The recordings.
    pub files: Vec<PathBuf>,
    /// Table or JSON.
    pub format: Format,
    /// `--fail-on`.
    pub fail_on: Option<Severity>,
    /// `--pid`/`--device`.
    pub filter: FilterArgs,
    /// `-v`: every finding on a line of its own.
    pub verbose: bool,
}

impl ShowArgs {
    /// The plan.
    pub fn plan(&self, _: &Globals) -> Result<ShowPlan> {
        Ok(ShowPlan {
            files: self.files.clone(),
            format: self.output.format(),
            fail_on: self.output.fail_on(),
            filter: self.filter.clone(),
            verbose: self.verbose,
        })
    }
}

/// `diff` options.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Run A: a recording, or a directory of one job's recordings (one per node).
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// Run B: the same.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    #[command(flatten)]
    pub output: FormatArgs,
}

/// A checked `diff`.
#[derive(Debug, Clone)]
pub struct DiffPlan {
    /// Run A.
    pub a: PathBuf,
    /// Run B.
    pub b: PathBuf,
    /// Table or JSON.
    pub format: Format,
    /// `--fail-on`, over both runs' peer-mirror findings.
    pub fail_on: Option<Severity>,
}

impl DiffArgs {
    /// The plan: a run compared with itself is refused.
    pub fn plan(&self, _: &Globals) -> Result<DiffPlan> {
        if self.a == self.b {
            return Err(UsageError(format!(
                "diff compares two runs and was given {} twice; give the bad run and a good one",
                self.a.display()
            ))
            .into());
        }
        Ok(DiffPlan {
            a: self.a.clone(),
            b: self.b.clone(),
            format: self.output.format(),
            fail_on: self.output.fail_on(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{globals, Cli, Command};
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Command {
        let cli = Cli::try_parse_from([&["gpuledger"], args].concat()).unwrap();
        cli.command.unwrap()
    }

    #[test]
    fn show_takes_the_reporting_flags_and_csv() {
        let g = globals::tests::plain();
        let Command::Show(s) = parse(&["show", "--json", "--fail-on", "warning", "a.ledger"])
        else {
            unreachable!("parsed as show")
        };
        let plan = s.plan(&g).unwrap();
        assert_eq!(
            (plan.format, plan.fail_on),
            (Format::Json, Some(Severity::Warning))
        );
        let Command::Show(s) = parse(&["show", "--format", "csv", "a.ledger"]) else {
            unreachable!("parsed as show")
        };
        assert_eq!(s.plan(&g).unwrap().format, Format::Csv);
    }

    #[test]
    fn diff_refuses_a_run_compared_with_itself() {
        let g = globals::tests::plain();
        let Command::Diff(d) = parse(&["diff", "a.ledger", "a.ledger"]) else {
            unreachable!("parsed as diff")
        };
        let err = d.plan(&g).unwrap_err().to_string();
        assert!(
            err.contains("twice; give the bad run and a good one"),
            "{err}"
        );
        let Command::Diff(d) = parse(&["diff", "--format", "json", "a", "b"]) else {
            unreachable!("parsed as diff")
        };
        assert_eq!(d.plan(&g).unwrap().format, Format::Json);
    }
}
