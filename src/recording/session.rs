//! One recording step: sample, attribute, analyse, append.

use super::{Recorder, RecordingError};
use crate::findings::{Finding, Thresholds};
use crate::knowledge::Base;
use crate::ledger::Ledger;
use crate::observe::{Observation, Observer};
use crate::sampler::{SampleError, Sampler};
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

/// The observation step of a recording: the rules' findings and the machine's known issues (the
/// kernel log is recorded on its own, as events).
pub fn observer(thresholds: &Thresholds) -> Observer {
    let observer = Observer::new(thresholds.clone());
    match Base::installed(None) {
        Ok(base) => observer.known_issues(base),
        Err(_) => observer,
    }
}

/// Takes a sample (stamped `time_ms` when given, e.g. a simulated clock), appends it and returns
/// the ledger and its findings.
pub fn step(
    sampler: &mut Sampler,
    recorder: &mut Recorder,
    observer: &mut Observer,
    time_ms: Option<u64>,
) -> Result<(Ledger, Vec<Finding>), StepError> {
    let mut snap = sampler.sample()?;
    if let Some(t) = time_ms {
        snap.time_ms = t;
    }
    let Observation { ledger, findings } = observer.observe(sampler.root(), snap);
    recorder.add(&ledger, &findings)?;
    Ok((ledger, findings))
}
