//! How a simulated job ended, kept in its tree as `gpuledger-sim/job.json`
//! ([`crate::layout::SIM_JOB_END`]) so a reader of the tree learns what a real
//! machine's scheduler or terminal would have shown: when, with what status, and the last lines
//! of its output.

use crate::layout;
use crate::root::Root;
use serde::{Deserialize, Serialize};
use std::io;
use thiserror::Error;

/// Schema name of `job.json`.
pub const JOB_END_SCHEMA: &str = "gpuledger.sim-job/1";

/// Why the job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobOutcome {
    /// It finished by itself.
    Exited,
    /// Host RAM ran out: page allocations failed, the runtime returned an error, the launcher
    /// tore the other ranks down and exited non-zero.
    HostMemoryExhausted,
}

/// The end of a simulated job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEnd {
    /// [`JOB_END_SCHEMA`].
    pub schema: String,
    /// Scenario name.
    pub scenario: String,
    /// Why it ended.
    pub outcome: JobOutcome,
    /// Seconds from the start of the run to the end.
    pub end_s: f64,
    /// The launcher's exit status (`torchrun` exits 1 when a rank failed), if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended the launcher, if one did.
    pub signal: Option<i32>,
    /// Microseconds since boot on the kernel log's clock (`dev/kmsg` `usec`), to line the end up
    /// with the kernel's records.
    pub boot_usec: u64,
    /// The last lines the job printed (stdout and stderr interleaved).
    pub output_tail: Vec<String>,
}

/// A `job.json` that could not be read.
#[derive(Debug, Error)]
pub enum JobEndError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}")]
    Read {
        /// The path inside the root.
        path: &'static str,
        /// The cause.
        source: io::Error,
    },
    /// The file is not a job-end record.
    #[error("{path} is not a gpuledger simulated job end (schema {JOB_END_SCHEMA})")]
    Parse {
        /// The path inside the root.
        path: &'static str,
        /// The cause.
        source: serde_json::Error,
    },
}

/// The job-end facts of a simulated tree: `Ok(None)` when the tree has none (the job still runs,
/// or the root is not a simulated tree).
pub fn read_job_end(root: &Root) -> Result<Option<JobEnd>, JobEndError> {
    let path = layout::SIM_JOB_END;
    if root.is_live() {
        return Ok(None);
    }
    let text = match root.read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(JobEndError::Read { path, source }),
    };
    let end: JobEnd =
        serde_json::from_slice(&text).map_err(|source| JobEndError::Parse { path, source })?;
    if end.schema != JOB_END_SCHEMA {
        let source = serde::de::Error::custom(format!("schema {:?}", end.schema));
        return Err(JobEndError::Parse { path, source });
    }
    Ok(Some(end))
}
