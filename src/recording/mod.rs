//! Recordings: a timeline of ledgers in one SQLite file (WAL mode).
//!
//! Schema version 1 (`meta.schema_version`):
//! - `meta(key, value)`: schema_version, command (JSON array), root, interval_ms, started_ms,
//!   gpuledger_version, kernel, and at the end exit_code / signal / ended_ms.
//! - `samples(id, t_ms, mem_total, mem_available, gpu_active, gpu_reclaim, unaccounted, gpu_source,
//!   processes)`: host counters, one row per sample.
//! - `processes(pid, comm, cmdline, rank, local_rank, env, first_sample, last_sample, labels)`;
//!   `labels` is JSON: cgroup, pod, container, job.
//! - `devices(id, json)`: the device as the snapshot saw it.
//! - `series(id, pid, device, region, class)` and `points(series, sample, total, resident, shared)`:
//!   a point is written only when a value changed, so plateaus cost nothing.
//! - `findings(kind, pid, device, peer, …, first_sample, last_sample)`: one row per finding identity
//!   with its peak bytes and worst severity.
//! - `kernel_log(sample, kind, message)`: kernel lines in the recording's window that match
//!   page-allocation failures, the OOM killer or a GPU driver (`sources::kmsg`).
//!
//! Each sample is one transaction, so a recorder killed with SIGKILL loses at most the sample it
//! was writing; readers see every committed sample.

mod read;
pub mod run;
pub mod session;
mod write;

pub use read::{open, HostSample, RecordedFinding, RecordedProcess, Recording, Series};
pub use write::{Recorder, RecordingMeta};

use thiserror::Error;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// A recording that cannot be written or read.
#[derive(Debug, Error)]
pub enum RecordingError {
    /// SQLite failed.
    #[error("recording {path}: {source}")]
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
    /// The file exists and would be overwritten.
    #[error("{path} already exists; choose another -o or delete it")]
    Exists {
        /// The file.
        path: String,
    },
}

const SCHEMA: &str = "
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE samples(id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, mem_total INTEGER,
  mem_available INTEGER, gpu_active INTEGER, gpu_reclaim INTEGER, unaccounted INTEGER,
  gpu_source TEXT, processes INTEGER NOT NULL);
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
  last_sample INTEGER NOT NULL, PRIMARY KEY(kind, pid, device, peer));
";
