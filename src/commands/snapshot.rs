//! The default command: one snapshot, as tables or JSON.

use crate::cli::{FailOn, SnapshotArgs};
use anyhow::{bail, Result};
use gpuledger::findings::{self, Kind, Severity, Thresholds};
use gpuledger::ledger::Ledger;
use gpuledger::outputs::{json, table};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::path::Path;
use std::process::ExitCode;

/// Exit status when --fail-on matched.
const EXIT_FINDING: u8 = 3;

pub fn run(root: Option<&Path>, args: &SnapshotArgs, t: &Thresholds) -> Result<ExitCode> {
    if let Some(name) = &args.explain {
        let Some(kind) = Kind::parse(name) else {
            let names: Vec<_> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            bail!("unknown finding {name:?}; known: {}", names.join(", "));
        };
        super::print(kind.explain())?;
        return Ok(ExitCode::SUCCESS);
    }
    let root = super::open_root(root)?;
    let mut sampler = Sampler::new(root, Scope::All, SamplerOptions::default());
    let snap = sampler.sample()?;
    let ledger = Ledger::from_snapshot(&snap);
    let found = findings::analyze(&ledger, t);
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
