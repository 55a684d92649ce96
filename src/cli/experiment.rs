//! `experiment` options and plan.

use super::Globals;
use anyhow::Result;
use clap::Args;
use gpuledger::experiment::{builtin, parse_controls, Control};
use gpuledger::units::parse_interval;
use std::path::PathBuf;
use std::time::Duration;

/// `experiment` options.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// Controls, comma-separated: built-in names or NAME:VAR=VAL,... (default: all built-in).
    #[arg(long, value_name = "LIST")]
    pub controls: Vec<String>,
    /// Runs per configuration (medians are compared).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// List the built-in controls and exit.
    #[arg(long)]
    pub list_controls: bool,
    /// Directory for the recordings.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Sampling interval (10ms or more).
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Duration,
    /// The command, after `--`.
    #[arg(
        last = true,
        value_name = "CMD",
        required_unless_present = "list_controls"
    )]
    pub command: Vec<String>,
}

/// A checked `experiment`.
#[derive(Debug, Clone)]
pub enum ExperimentPlan {
    /// `--list-controls`.
    ListControls,
    /// Record the command as given and once per control.
    Run(ExperimentRun),
}

/// The runs of an experiment.
#[derive(Debug, Clone)]
pub struct ExperimentRun {
    /// The controls, parsed.
    pub controls: Vec<Control>,
    /// Runs per configuration (1 or more).
    pub repeat: u32,
    /// Where the recordings go.
    pub dir: PathBuf,
    /// Sampling interval.
    pub interval: Duration,
    /// The command.
    pub command: Vec<String>,
}

impl ExperimentArgs {
    /// The plan: controls are parsed here, so an unknown one is refused before any run.
    pub fn plan(&self, _: &Globals) -> Result<ExperimentPlan> {
        if self.list_controls {
            return Ok(ExperimentPlan::ListControls);
        }
        let list: Vec<String> = self
            .controls
            .iter()
            .flat_map(|c| c.split(',').map(String::from))
            .collect();
        let controls = if list.is_empty() {
            builtin()
        } else {
            parse_controls(&join_user_controls(&list))?
        };
        Ok(ExperimentPlan::Run(ExperimentRun {
            controls,
            repeat: self.repeat.max(1),
            dir: self.output.clone().unwrap_or_else(|| {
                PathBuf::from(format!("gpuledger-experiment-{}", std::process::id()))
            }),
            interval: self.interval,
            command: self.command.clone(),
        }))
    }
}

/// `a,b,mine:X=1,Y=2` splits at every comma; put user controls' assignments back together.
fn join_user_controls(parts: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        match out.last_mut() {
            Some(last) if last.contains(':') && p.contains('=') && !p.contains(':') => {
                last.push(',');
                last.push_str(p);
            }
            _ => out.push(p.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{globals, Cli, Command};
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<ExperimentPlan> {
        let cli = Cli::try_parse_from([&["gpuledger", "experiment"], args].concat()).unwrap();
        let Some(Command::Experiment(e)) = cli.command else {
            unreachable!("parsed as experiment")
        };
        e.plan(&globals::tests::plain())
    }

    #[test]
    fn user_controls_keep_their_assignments_together() {
        let Ok(ExperimentPlan::Run(run)) = plan(&["--controls", "mine:A=1,B=2", "--", "true"])
        else {
            panic!("a run")
        };
        assert_eq!(run.controls.len(), 1);
        assert_eq!(run.controls[0].env.len(), 2);
    }

    #[test]
    fn an_unknown_control_is_refused_before_any_run() {
        assert!(plan(&["--controls", "no-such-control", "--", "true"]).is_err());
        assert!(matches!(
            plan(&["--list-controls"]),
            Ok(ExperimentPlan::ListControls)
        ));
    }
}
