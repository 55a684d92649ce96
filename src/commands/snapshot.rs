//! The default command: one snapshot, as tables or JSON.

use super::Ctx;
use crate::cli::{FailOn, SnapshotArgs};
use anyhow::{Context, Result};
use gpuledger::findings::{self, Severity};
use gpuledger::knowledge::KnownIssues;
use gpuledger::ledger::Ledger;
use gpuledger::outputs::{json, table};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::process::ExitCode;

/// Exit status when --fail-on matched.
const EXIT_FINDING: u8 = 3;

pub fn run(ctx: &Ctx, args: &SnapshotArgs) -> Result<ExitCode> {
    // clap's possible values for --explain are `findings::EXPLAINED`, each with a text.
    if let Some(text) = args.explain.as_deref().and_then(findings::explain) {
        super::print(text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let root = ctx.open_root()?;
    let mut sampler = Sampler::new(root, Scope::All, SamplerOptions::default());
    let snap = sampler.sample()?;
    let ledger = Ledger::from_snapshot(&snap);
    let mut found = findings::analyze(&ledger, &ctx.thresholds);
    KnownIssues::of_machine(sampler.root(), &snap)
        .context("the embedded known-issues base")?
        .extend(&mut found);
    if args.json {
        super::print(&json::render(&ledger, &found))?;
    } else {
        super::print(&table::render_snapshot(&ledger, &found))?;
    }
    let limit = match args.fail_on {
        None => return Ok(ExitCode::SUCCESS),
        Some(FailOn::Warning) => Severity::Warning,
        Some(FailOn::Critical) => Severity::Critical,
    };
    let hit = findings::worst(&found).is_some_and(|w| w >= limit);
    Ok(if hit {
        ExitCode::from(EXIT_FINDING)
    } else {
        ExitCode::SUCCESS
    })
}
