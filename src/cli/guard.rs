//! `guard` options and plan.

use super::parse::{size, size_spec};
use super::record::JobArgs;
use super::{Globals, TraceArgs};
use anyhow::Result;
use clap::{ArgGroup, Args, ValueEnum};
use gpuledger::guard::machine::Response;
use gpuledger::guard::run::{GuardPlan, JobStart};
use gpuledger::guard::Policy;
use gpuledger::units::{parse_duration, parse_interval, SizeSpec};
use std::time::Duration;

/// What guard does when a threshold is crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GuardAction {
    /// SIGTERM to the job, SIGKILL after --grace.
    Term,
    /// SIGKILL at once.
    Kill,
    /// Only warn (for trying thresholds).
    None,
}

/// `guard` options.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("job_target").args(["command", "pids", "cgroup", "slurm_job"]).required(true)))]
pub struct GuardArgs {
    /// Act when MemAvailable falls below this (a size, or a share of MemTotal from 0% to 100%).
    #[arg(long, default_value = "10%", value_name = "SIZE|PCT", value_parser = size_spec)]
    pub min_available: SizeSpec,
    /// Act when driver-held host memory (GPUActive, nr_gpu_active, else unaccounted) passes this.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_driver_held: Option<u64>,
    /// Act when the job's own processes hold more host-class GPU memory than this (GTT/system
    /// regions, KFD, NVIDIA pinned host memory).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_job_host_gpu: Option<u64>,
    /// What to do.
    #[arg(long, value_enum, default_value = "term")]
    pub action: GuardAction,
    /// Time between SIGTERM and SIGKILL.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub grace: Duration,
    /// Sampling interval (10ms or more).
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Duration,
    /// Print one JSON event line per warning or action on stdout (for log shippers).
    #[arg(long)]
    pub json: bool,
    /// Guard these running processes instead of starting a command.
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    #[command(flatten)]
    pub job: JobArgs,
    #[command(flatten)]
    pub tracing: TraceArgs,
    /// The command to run under guard, with its arguments (after `--` when an argument of it
    /// could be read as an option of guard's own).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// A checked `guard`: the library's plan and how events are printed.
#[derive(Debug, Clone)]
pub struct GuardRun {
    /// What to watch and when to act.
    pub plan: GuardPlan,
    /// `--json`: an event line per warning or action on stdout.
    pub json: bool,
}

impl GuardArgs {
    /// The plan; clap has checked the values and that exactly one job is given.
    pub fn plan(&self, g: &Globals) -> Result<GuardRun> {
        let start = if !self.command.is_empty() {
            JobStart::Command(self.command.clone())
        } else if let Some(spec) = self.job.spec() {
            JobStart::Job(spec)
        } else {
            JobStart::Pids(self.pids.clone())
        };
        let plan = GuardPlan {
            policy: Policy {
                min_available: self.min_available,
                max_driver_held: self.max_driver_held,
                max_job_host_gpu: self.max_job_host_gpu,
            },
            grace: self.grace,
            interval: self.interval,
            response: match self.action {
                GuardAction::None => Response::Warn,
                GuardAction::Term => Response::Term,
                GuardAction::Kill => Response::Kill,
            },
            thresholds: g.thresholds.clone(),
            trace: self.tracing.plan(&self.command, g.is_live())?,
            start,
        };
        Ok(GuardRun {
            plan,
            json: self.json,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{globals, Cli, Command};
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> GuardPlan {
        let cli = Cli::try_parse_from([&["gpuledger", "guard"], args].concat()).unwrap();
        let Some(Command::Guard(a)) = cli.command else {
            unreachable!("parsed as guard")
        };
        a.plan(&globals::tests::plain()).unwrap().plan
    }

    #[test]
    fn the_plan_carries_the_policy_and_the_job() {
        let p = plan(&[
            "--max-driver-held",
            "8GiB",
            "--action",
            "none",
            "--",
            "sleep",
            "1",
        ]);
        assert_eq!(p.policy.max_driver_held, Some(8 << 30));
        assert_eq!(p.response, Response::Warn);
        assert_eq!(p.start, JobStart::Command(vec!["sleep".into(), "1".into()]));
        assert_eq!(plan(&["--pid", "9"]).start, JobStart::Pids(vec![9]));
    }

    #[test]
    fn a_second_job_is_refused_by_the_parser() {
        let err = Cli::try_parse_from(["gpuledger", "guard", "--pid", "1", "--cgroup", "x"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot be used with"), "{err}");
    }
}
