//! The default command's options (gpuledger with no command) and its plan.

use super::{FilterArgs, Format, FormatArgs, Globals};
use anyhow::Result;
use clap::builder::PossibleValuesParser;
use clap::{Args, ValueEnum};
use gpuledger::findings::window::{parse_since, Since};
use gpuledger::findings::Severity;
use gpuledger::ledger::SortKey;
use gpuledger::units::parse_interval;
use std::time::Duration;

/// Process orders for --sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortArg {
    /// Host-class (GTT/system) resident bytes, largest first.
    Host,
    /// Device-local (VRAM) resident bytes, largest first.
    Local,
    /// Pid.
    Pid,
    /// Rank, then pid (the default of the snapshot).
    Rank,
}

impl SortArg {
    /// The library's sort key.
    pub fn key(self) -> SortKey {
        match self {
            SortArg::Host => SortKey::Host,
            SortArg::Local => SortKey::Local,
            SortArg::Pid => SortKey::Pid,
            SortArg::Rank => SortKey::Rank,
        }
    }
}

/// Options of the default snapshot command.
#[derive(Debug, Args)]
#[command(next_help_heading = "Snapshot options")]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub output: FormatArgs,

    /// Repeat the snapshot every INTERVAL (10ms or more) until interrupted, as nvidia-smi -l:
    /// tables under a timestamp line, JSON as one compact document per line, CSV rows under one
    /// header. Ctrl-C or a closed pipe ends it with status 0.
    #[arg(short = 'l', long = "loop", value_name = "INTERVAL", value_parser = parse_interval)]
    pub loop_interval: Option<Duration>,

    /// With --loop: stop after N snapshots.
    #[arg(long, value_name = "N", requires = "loop_interval", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// Order of the process rows (table, JSON and CSV).
    #[arg(long, value_enum, default_value = "rank", value_name = "KEY")]
    pub sort: SortArg,

    #[command(flatten)]
    pub filter: FilterArgs,

    /// Explain a finding kind (snapshot and timeline findings) and exit.
    #[arg(long, value_name = "FINDING", value_parser = PossibleValuesParser::new(gpuledger::findings::Kind::names()))]
    pub explain: Option<String>,

    /// List every finding in the table; by default more than four of one kind and severity are
    /// one line (64 ranks × 63 peers, bytes each and in all). JSON always lists each.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Kernel-log findings before this are history (info, not a current verdict): a duration
    /// before now (30m, 2h, 1day) or an RFC 3339 time; default the last hour.
    #[arg(long, value_name = "DURATION|TIME", value_parser = parse_since)]
    pub since: Option<Since>,
}

/// What a snapshot run does, checked.
#[derive(Debug, Clone)]
pub enum SnapshotPlan {
    /// `--explain`: print this text and exit.
    Explain(&'static str),
    /// Sample and print.
    Show(ShowSnapshot),
}

/// Sampling and printing snapshots.
#[derive(Debug, Clone)]
pub struct ShowSnapshot {
    /// Table, JSON or CSV.
    pub format: Format,
    /// `--loop`.
    pub every: Option<Duration>,
    /// `--count`.
    pub count: Option<u64>,
    /// Process order.
    pub sort: SortKey,
    /// `--pid`/`--device`.
    pub filter: FilterArgs,
    /// `--fail-on`.
    pub fail_on: Option<Severity>,
    /// `-v`.
    pub verbose: bool,
    /// `--since`.
    pub since: Since,
}

impl SnapshotArgs {
    /// The first snapshot option given (a default left alone is not given), so that one written
    /// before a command, where it would mean nothing, is refused instead of ignored.
    pub fn given(&self) -> Option<&'static str> {
        [
            (self.output.json, "--json"),
            (self.output.format != Format::Table, "--format"),
            (self.loop_interval.is_some(), "--loop"),
            (self.count.is_some(), "--count"),
            (self.sort != SortArg::Rank, "--sort"),
            (!self.filter.pids.is_empty(), "--pid"),
            (!self.filter.devices.is_empty(), "--device"),
            (self.output.fail_on.is_some(), "--fail-on"),
            (self.explain.is_some(), "--explain"),
            (self.verbose, "--verbose"),
            (self.since.is_some(), "--since"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The plan; clap has checked each value.
    pub fn plan(&self, _: &Globals) -> Result<SnapshotPlan> {
        // clap's possible values for --explain are `findings::Kind::names()`, each with a text.
        if let Some(text) = self
            .explain
            .as_deref()
            .and_then(gpuledger::findings::explain)
        {
            return Ok(SnapshotPlan::Explain(text));
        }
        Ok(SnapshotPlan::Show(ShowSnapshot {
            format: self.output.format(),
            every: self.loop_interval,
            count: self.count,
            sort: self.sort.key(),
            filter: self.filter.clone(),
            fail_on: self.output.fail_on(),
            verbose: self.verbose,
            since: self.since.unwrap_or_default(),
        }))
    }
}
