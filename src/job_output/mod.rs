//! The job's own evidence: what `record` keeps of a started job's output while passing it through.
//!
//! The job's stdout and stderr are read from pipes and written on to gpuledger's own stdout and
//! stderr as each read returns (so the user sees everything, live, on the stream it was written
//! to). From the same bytes, bounded, `record` keeps:
//! - lines that match runtime and driver errors ([`ErrorKind`]), at most [`MAX_ERROR_LINES`],
//!   the rest counted;
//! - the last [`TAIL_LINES`] lines;
//! - `--rate` series: a number taken from each matching line ([`RateSpec`]);
//! - phase markers: lines the job appends to the file named in [`MARKERS_ENV`].
//!
//! Every stored line is at most [`MAX_LINE_BYTES`] (invalid UTF-8 replaced); a line longer than
//! [`SCAN_BYTES`] is matched on its first [`SCAN_BYTES`] only, so a 10 MB line costs no memory.
//!
//! Trade-off: the job sees pipes where it would have seen a terminal. Programs that colour or
//! line-buffer only on a terminal change their output; Python block-buffers a pipe, so record sets
//! `PYTHONUNBUFFERED=1` unless the environment already sets it. Each stream keeps its own order;
//! between stdout and stderr, lines written within the same instant may swap, as with any two
//! pipes read apart.

mod classify;
mod collect;
mod markers;
mod oom;
mod pump;
mod rate;

pub use classify::{classify, ErrorKind, Traceback};
pub use collect::{Batch, Collector, Counts};
pub use markers::MarkerFile;
pub use oom::{device_oom, DeviceOom, OomLayer};
pub use pump::{pump, Capture};
pub use rate::{plausible, RateSpec, RateSpecError, MAX_RATE_MAGNITUDE};

use serde::{Deserialize, Serialize};

/// Error lines kept per recording; later ones are counted.
pub const MAX_ERROR_LINES: usize = 200;
/// Lines of the output's tail kept.
pub const TAIL_LINES: usize = 100;
/// The most bytes of one line that are stored.
pub const MAX_LINE_BYTES: usize = 1024;
/// The most bytes of one line that are held and matched.
pub const SCAN_BYTES: usize = 4096;
/// Points kept per rate series; later ones are counted.
pub const MAX_RATE_POINTS: usize = 100_000;
/// Markers kept; later ones are counted.
pub const MAX_MARKERS: usize = 10_000;
/// The environment variable naming the file a job writes phase markers to.
pub const MARKERS_ENV: &str = "GPULEDGER_MARKERS";

/// Which of the job's streams a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// One stored line of the job's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputLine {
    /// When the line was complete, ms since the epoch.
    pub t_ms: u64,
    /// Its stream.
    pub stream: Stream,
    /// The line, lossy UTF-8, at most [`MAX_LINE_BYTES`], control characters kept (escape on display).
    pub text: String,
}

/// An error line: the line and what it matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorLine {
    /// What it matched.
    pub kind: ErrorKind,
    /// The line.
    pub line: OutputLine,
}

/// A phase marker the job wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Marker {
    /// When it was read, ms since the epoch.
    pub t_ms: u64,
    /// Its text.
    pub text: String,
}

/// Lossy UTF-8 of `bytes`, cut at a character boundary to at most [`MAX_LINE_BYTES`], without
/// the line end.
pub fn stored_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= MAX_LINE_BYTES {
        return text.into_owned();
    }
    let mut end = MAX_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Milliseconds since the epoch, now (the process's monotonic wall time, as samples are stamped).
pub fn now_ms() -> u64 {
    crate::clock::wall_ms()
}

#[cfg(test)]
mod tests;
