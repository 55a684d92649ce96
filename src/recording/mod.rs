//! Recordings: a timeline of ledgers in one self-contained SQLite file.
//!
//! Schema version 5 (`meta.schema_version`):
//! - `meta(key, value)`: schema_version, command (JSON array), root, interval_ms, started_ms,
//!   gpuledger_version, kernel, and at the end exit_code / signal / ended_ms; a followed job's
//!   labels as `label.<name>` (slurm_job, slurm_steps, user, node, partition, followed, pod,
//!   container) and a `note` saying how it ended.
//! - `samples(id, t_ms, mem_total, mem_available, gpu_active, gpu_reclaim, unaccounted, gpu_source,
//!   processes, driver_held, held_counter, held_counter_bytes, pinned_shmem)`: host counters, one
//!   row per sample, and the ledger's driver-held host memory (`HostTotals::driver_held`) with its
//!   parts, so that readers never redefine it.
//! - `processes(pid, comm, cmdline, rank, local_rank, env, first_sample, last_sample, labels)`;
//!   `labels` is JSON: cgroup, pod, container, job.
//! - `devices(id, json)`: the device as the snapshot saw it.
//! - `series(id, pid, device, region, class)` and `points(series, sample, total, resident, shared)`:
//!   a point is written only when a value changed, so plateaus cost nothing.
//! - `findings(kind, pid, device, peer, …, first_sample, last_sample)`: one row per finding identity
//!   with its peak bytes and, from the sample of that peak, its backing, message and `severity`
//!   (so a recorded finding says what a snapshot of its peak says); `worst_severity` is the worst
//!   over the whole recording, kept apart and labelled so wherever it is shown.
//! - `kernel_log(sample, kind, message)`: kernel lines in the recording's window that match
//!   page-allocation failures, the OOM killer or a GPU driver (`sources::kmsg`).
//! - The job's own evidence (`job_output`), for a command that `record` started:
//!   `output_lines(t_ms, stream, kind, text)`: its runtime/driver error lines (bounded);
//!   `output_tail(seq, t_ms, stream, text)`: its last lines; `rates(id, name, unit, regex,
//!   dropped)` and `rate_points(rate, t_ms, value)`: `--rate` series; `markers(t_ms, text)`: the
//!   phase markers it wrote. `meta.output_captured` says the output was captured at all;
//!   `meta.output_lines` and `meta.output_errors_dropped` count what was seen and not kept.
//! - API-level tracing of a started command (`trace`, `trace_write`, `trace_read`):
//!   `api_calls(t_ms, pid, tid, platform, api, op, device, bytes, address, flags, result)`, one row
//!   per traced call or tracer status event, a free carrying the kind, device and bytes of what it
//!   freed; `meta.trace` ("on: LIBRARY" or "off: why"), `meta.trace_dropped` (events lost between
//!   the job and gpuledger), `meta.trace_not_stored` (beyond the row limit), `meta.trace_foreign`
//!   (events from processes outside the job, refused),
//!   `meta.trace_level_zero` ("on" or "off: why": the Level Zero interposer in `LD_PRELOAD`).
//!
//! Version 4 lacks `api_calls` and `meta.trace`; it reads with no traced calls. Version 3 lacks the evidence tables; it reads with no evidence. Version 2 lacks the driver-held columns and `worst_severity`, and its `severity` is the worst
//! over time. Reading it, driver-held is GPUActive, else the unaccounted residual (what it
//! recorded: attributed pinned shmem was not kept), the stored severity becomes
//! `worst_severity`, and a finding's severity at its peak is the one its backing implies
//! (peer_mirror), else the stored one. Version 1 is version 2's layout, except that files written
//! before `labels` and `kernel_log` existed lack them (they still said version 1); readers check
//! for each optional part instead of failing. Kinds, severities and backings are read back as
//! enums; a finding kind this build does not know reads as [`crate::findings::Kind::Unknown`]
//! (the finding is kept), any other value it does not know is an error naming it, never a default.
//! Any change to the layout bumps the version; a version above [`SCHEMA_VERSION`] is refused with
//! a message to upgrade.
//!
//! The file is born complete: schema and `meta` are written into a temporary file beside it that
//! is then renamed into place, so a killed recorder never leaves a file without tables. While
//! recording, the file is in WAL mode, each sample is one transaction (a SIGKILL loses at most the
//! sample being written) and the WAL is checkpointed every [`CHECKPOINT_EVERY`], so a copy of the
//! `.ledger` alone holds all but the last seconds. On close it returns to rollback-journal mode:
//! no `-wal` or `-shm` is left beside it.
//!
//! Reading never loads every sample: one pass over the samples and one per series fold them into
//! totals, low and high points and at most [`PLOT_COLUMNS`] min/max columns (`read_host`,
//! `read_series`), so memory does not grow with the recording's length.

mod create;
pub mod follow;
mod job_python;
pub mod job_target;
mod names;
mod read;
mod read_check;
mod read_columns;
mod read_host;
mod read_open;
mod read_output;
mod read_rows;
mod read_series;
mod recorded;
pub mod run;
pub mod session;
pub mod trace;
pub(crate) mod trace_read;
mod trace_write;
pub mod trace_ze;
mod write;
mod write_output;
pub mod writer;

pub use names::{name_of, serialize_api, serialize_platform, UnknownValue};
pub use read::{open, Recording};
pub use read_columns::PlotColumns;
pub use read_host::{HostColumn, HostSummary};
pub use read_output::{JobEvidence, RateSeries};
pub use read_series::{ClassSeries, Hold, Step, HOLD_BAND, MIN_STEP_BYTES};
pub use recorded::{RecordedFinding, RecordedProcess};
pub use trace_read::{CallRow, CallTable, ROUNDING_FLOOR};
pub use trace_write::Resolver;
pub use write::{Recorder, RecordingMeta};

use std::time::Duration;
use thiserror::Error;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 5;
/// The oldest schema version this build reads.
pub const OLDEST_READABLE: i64 = 1;
/// How often a recorder copies its WAL into the main file.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(2);
/// Columns (pixel columns of a plot) a series is folded into: each keeps its min and max.
pub const PLOT_COLUMNS: usize = 1000;

/// A recording that cannot be written or read.
#[derive(Debug, Error)]
pub enum RecordingError {
    /// SQLite failed (`main` prints the cause after this line).
    #[error("recording {path}")]
    Sqlite {
        /// The file.
        path: String,
        /// The cause.
        source: rusqlite::Error,
    },
    /// The file is no gpuledger recording.
    #[error("{path} is not a gpuledger recording ({why}); make one with `gpuledger record -o FILE -- CMD`")]
    NotARecording {
        /// The file.
        path: String,
        /// What was wrong.
        why: String,
    },
    /// A kind, severity, backing or counter name this build has no enum variant for.
    #[error("recording {path} holds a value this gpuledger does not know")]
    UnknownValue {
        /// The file.
        path: String,
        /// The value and its column.
        source: UnknownValue,
    },
    /// The file is a recording (or an SQLite database) cut short or corrupted.
    #[error("{path} is damaged ({why}); a recording cut short by a full disk or a partial copy keeps only what its last checkpoint held: copy it again from where it was recorded")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// Written by a newer gpuledger.
    #[error("{path} was recorded by a newer gpuledger (schema version {found}; this one reads {OLDEST_READABLE} to {SCHEMA_VERSION}); upgrade gpuledger to read it")]
    Newer {
        /// The file.
        path: String,
        /// The version in the file.
        found: i64,
    },
    /// The file cannot be read.
    #[error("cannot read recording {path}")]
    Unreadable {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Creating the file failed.
    #[error("cannot create recording {path}")]
    Create {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A `-wal` or `-shm` of an earlier recording lies at the path without its database: SQLite
    /// would replay the old run's samples into the new recording.
    #[error("{wal} is left from an earlier recording of {path} (its recorder was killed); a new recording there would take in its samples: move it away with the file it belongs to, choose another -o, or add --force to discard it")]
    StaleSideFile {
        /// The recording to be created.
        path: String,
        /// The leftover file.
        wal: String,
    },
    /// The file exists and would be overwritten.
    #[error("{path} already exists; choose another -o, or add --force to overwrite it")]
    Exists {
        /// The file.
        path: String,
    },
}

const SCHEMA: &str = "
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE samples(id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, mem_total INTEGER,
  mem_available INTEGER, gpu_active INTEGER, gpu_reclaim INTEGER, unaccounted INTEGER,
  gpu_source TEXT, processes INTEGER NOT NULL, driver_held INTEGER, held_counter TEXT,
  held_counter_bytes INTEGER, pinned_shmem INTEGER);
CREATE TABLE processes(pid INTEGER PRIMARY KEY, comm TEXT NOT NULL, cmdline TEXT NOT NULL,
  rank INTEGER, local_rank INTEGER, env TEXT NOT NULL, first_sample INTEGER NOT NULL,
  last_sample INTEGER NOT NULL, labels TEXT NOT NULL DEFAULT '{}');
CREATE TABLE devices(id TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE series(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, device TEXT NOT NULL,
  region TEXT NOT NULL, class TEXT NOT NULL, UNIQUE(pid, device, region));
CREATE TABLE points(series INTEGER NOT NULL, sample INTEGER NOT NULL, total INTEGER,
  resident INTEGER, shared INTEGER, PRIMARY KEY(series, sample)) WITHOUT ROWID;
CREATE TABLE kernel_log(sample INTEGER NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);
CREATE TABLE findings(kind TEXT NOT NULL, pid INTEGER NOT NULL, device TEXT NOT NULL,
  peer TEXT NOT NULL, severity TEXT NOT NULL, rank INTEGER, bytes_peak INTEGER NOT NULL,
  backing TEXT, source TEXT, message TEXT NOT NULL, first_sample INTEGER NOT NULL,
  last_sample INTEGER NOT NULL, worst_severity TEXT NOT NULL, PRIMARY KEY(kind, pid, device, peer));
CREATE TABLE output_lines(t_ms INTEGER NOT NULL, stream TEXT NOT NULL, kind TEXT NOT NULL,
  text TEXT NOT NULL);
CREATE TABLE output_tail(seq INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, stream TEXT NOT NULL,
  text TEXT NOT NULL);
CREATE TABLE rates(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, unit TEXT,
  regex TEXT NOT NULL, dropped INTEGER NOT NULL DEFAULT 0);
CREATE TABLE rate_points(rate INTEGER NOT NULL, t_ms INTEGER NOT NULL, value REAL NOT NULL);
CREATE TABLE markers(t_ms INTEGER NOT NULL, text TEXT NOT NULL);
CREATE TABLE api_calls(t_ms INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
  platform TEXT NOT NULL, api TEXT NOT NULL, op TEXT NOT NULL, device INTEGER,
  bytes INTEGER NOT NULL, address INTEGER NOT NULL, flags INTEGER NOT NULL,
  result INTEGER NOT NULL);
";

#[cfg(test)]
mod tests;
