//! One recording step: sample, attribute, analyse, append.

use super::{Recorder, RecordingError};
use crate::findings::{analyze, Finding, Thresholds};
use crate::ledger::Ledger;
use crate::sampler::{SampleError, Sampler};
use std::collections::BTreeMap;
use thiserror::Error;

/// A step that failed.
#[derive(Debug, Error)]
pub enum StepError {
    /// Sampling failed.
    #[error(transparent)]
    Sample(#[from] SampleError),
    /// Writing failed.
    #[error(transparent)]
    Write(#[from] RecordingError),
}

/// Takes a sample (stamped `time_ms` when given, e.g. a simulated clock), appends it and returns
/// the ledger and its findings; `registered` (pid → host bytes registered in place, from the
/// traced calls) becomes part of the ledger ([`Ledger::add_registered`]).
pub fn step(
    sampler: &mut Sampler,
    recorder: &mut Recorder,
    thresholds: &Thresholds,
    time_ms: Option<u64>,
    registered: &BTreeMap<u32, u64>,
) -> Result<(Ledger, Vec<Finding>), StepError> {
    let mut snap = sampler.sample()?;
    if let Some(t) = time_ms {
        snap.time_ms = t;
    }
    let mut ledger = Ledger::from_snapshot(&snap);
    ledger.add_registered(registered);
    let mut findings = analyze(&ledger, thresholds);
    recorder.add_known_issues(sampler.root(), &snap, &mut findings);
    recorder.add(&ledger, &findings)?;
    Ok((ledger, findings))
}
