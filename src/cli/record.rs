//! `record` options and plan.

use super::parse::{label, parse_rate, slurm_job_id};
use super::{Globals, OutputArgs, TraceArgs};
use anyhow::Result;
use clap::{ArgGroup, Args};
use gpuledger::job_output::RateSpec;
use gpuledger::recording::job_target::JobSpec;
use gpuledger::recording::run::RunOptions;
use gpuledger::units::{parse_duration, parse_interval};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// `record` options.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").args(["command", "pids", "all", "cgroup", "slurm_job"]).required(true)))]
pub struct RecordArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// Sampling interval (10ms or more).
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Duration,
    /// Attach to these pids (and their children) instead of running a command.
    #[arg(long = "pid", value_name = "PID", conflicts_with = "all")]
    pub pids: Vec<u32>,
    /// Record every process.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub job: JobArgs,
    /// A label for the recording's `meta` (with --all, --cgroup or --slurm-job), e.g.
    /// --label slurm_job=42; repeatable; overrides a label gpuledger found itself.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label, conflicts_with_all = ["pids", "command"])]
    pub labels: Vec<(String, String)>,
    /// Stop after this long (with --pid, --all or a job; a command is recorded until it exits).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Take a throughput series from the command's output: NAME=REGEX[:UNIT], the regex with
    /// one capture group around the number, e.g. 'wave=wave time ([0-9.]+) s:s/wave'. Repeatable.
    #[arg(long = "rate", value_name = "NAME=REGEX[:UNIT]", value_parser = parse_rate)]
    pub rates: Vec<RateSpec>,
    #[command(flatten)]
    pub tracing: TraceArgs,
    /// The command to run and record, with its arguments (after `--` when an argument of it
    /// could be read as an option of record's own).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Attaching to a job's processes as they come and go (`record` and `guard`).
#[derive(Debug, Args)]
pub struct JobArgs {
    /// Follow every process in this cgroup and below it: a path as /proc/PID/cgroup shows it, or
    /// the directory under /sys/fs/cgroup. Ends when the cgroup is removed or, after it had
    /// processes, empty.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// Follow Slurm job ID on this node: its cgroup (…/slurmstepd.scope/job_ID/step_*), or its
    /// slurmstepd's processes where Slurm tracks jobs without cgroups. Waits up to a minute for
    /// the job to appear (a prolog runs before it does).
    #[arg(long, value_name = "ID", value_parser = slurm_job_id)]
    pub slurm_job: Option<String>,
}

impl JobArgs {
    /// The job named, if any (`--cgroup` wins: clap lets only one be given).
    pub fn spec(&self) -> Option<JobSpec> {
        match (&self.cgroup, &self.slurm_job) {
            (Some(path), _) => Some(JobSpec::Cgroup(path.clone())),
            (None, Some(id)) => Some(JobSpec::SlurmJob(id.clone())),
            (None, None) => None,
        }
    }
}

/// What `record` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordTarget {
    /// A command it starts.
    Command(Vec<String>),
    /// A job named by `--cgroup` or `--slurm-job`, found on the machine at run time.
    Job(JobSpec),
    /// Running pids.
    Pids(Vec<u32>),
    /// Every process.
    All,
}

/// A checked `record`.
#[derive(Debug, Clone)]
pub struct RecordPlan {
    /// The recording to write.
    pub output: PathBuf,
    /// Whether an existing recording there is replaced.
    pub force: bool,
    /// Sampling, thresholds, throughput series and API tracing.
    pub run: RunOptions,
    /// What is recorded.
    pub target: RecordTarget,
    /// `--label`s.
    pub labels: Vec<(String, String)>,
}

impl RecordArgs {
    /// The plan; clap has checked the values and that exactly one target is given.
    pub fn plan(&self, g: &Globals) -> Result<RecordPlan> {
        let target = if !self.command.is_empty() {
            RecordTarget::Command(self.command.clone())
        } else if let Some(spec) = self.job.spec() {
            RecordTarget::Job(spec)
        } else if !self.pids.is_empty() {
            RecordTarget::Pids(self.pids.clone())
        } else {
            RecordTarget::All
        };
        // An existing recording is refused when it is created (without --force), after the
        // target is found: a missing cgroup or job is the error to report first.
        let output = self.output.output.clone().unwrap_or_else(default_output);
        Ok(RecordPlan {
            output,
            force: self.output.force,
            run: RunOptions {
                interval: self.interval,
                duration: self.duration,
                thresholds: g.thresholds.clone(),
                rates: self.rates.clone(),
                trace: Some(self.tracing.plan(&self.command, g.is_live())?),
            },
            target,
            labels: self.labels.clone(),
        })
    }
}

/// `gpuledger-<UTC time>-<pid>.ledger`: the pid keeps two recorders started in the same second
/// apart, and a name taken by an older file moves on to `-2`, `-3`…
fn default_output() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stem = format!(
        "gpuledger-{}-{}",
        t.replace([':', '-'], "").trim_end_matches('Z'),
        std::process::id()
    );
    (1u32..)
        .map(|n| match n {
            1 => PathBuf::from(format!("{stem}.ledger")),
            n => PathBuf::from(format!("{stem}-{n}.ledger")),
        })
        .find(|p| !p.exists())
        .unwrap_or_else(|| PathBuf::from(format!("{stem}.ledger")))
}

#[cfg(test)]
mod tests {
    use super::super::{globals, Cli, Command};
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<RecordPlan> {
        let cli = Cli::try_parse_from([&["gpuledger", "record"], args].concat()).unwrap();
        let Some(Command::Record(r)) = cli.command else {
            unreachable!("parsed as record")
        };
        r.plan(&globals::tests::plain())
    }

    #[test]
    fn each_target_is_planned_from_its_flags() {
        assert_eq!(
            plan(&["--no-trace", "--", "sleep", "1"]).unwrap().target,
            RecordTarget::Command(vec!["sleep".into(), "1".into()])
        );
        assert_eq!(
            plan(&["--pid", "7"]).unwrap().target,
            RecordTarget::Pids(vec![7])
        );
        assert_eq!(plan(&["--all"]).unwrap().target, RecordTarget::All);
        assert_eq!(
            plan(&["--slurm-job", "42"]).unwrap().target,
            RecordTarget::Job(JobSpec::SlurmJob("42".into()))
        );
    }

    #[test]
    fn the_output_and_force_are_carried_and_a_default_name_is_free() {
        let p = plan(&["-o", "a.ledger", "--force", "--all"]).unwrap();
        assert_eq!((p.output, p.force), (PathBuf::from("a.ledger"), true));
        let p = plan(&["--all"]).unwrap();
        let name = p.output.to_string_lossy().into_owned();
        assert!(
            name.starts_with("gpuledger-") && name.ends_with(".ledger"),
            "{name}"
        );
        assert!(!p.output.exists());
    }

    #[test]
    fn trace_on_a_recorded_tree_is_refused_with_why() {
        let cli = Cli::try_parse_from(["gpuledger", "record", "--trace", "--", "true"]).unwrap();
        let Some(Command::Record(r)) = cli.command else {
            unreachable!("parsed as record")
        };
        let g = super::super::Globals {
            root: Some("tree".into()),
            ..globals::tests::plain()
        };
        let err = r.plan(&g).unwrap_err().to_string();
        assert!(err.starts_with("--trace: cannot trace"), "{err}");
    }
}
