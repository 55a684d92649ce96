//! The rows of a recording, read back as typed values: its processes and its findings.

use crate::findings::{Backing, Finding, Kind, Severity};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// A recorded process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedProcess {
    /// Pid.
    pub pid: u32,
    /// comm.
    pub comm: String,
    /// cmdline.
    pub cmdline: String,
    /// Rank.
    pub rank: Option<u32>,
    /// Local rank.
    pub local_rank: Option<u32>,
    /// Allow-listed environment.
    pub env: BTreeMap<String, String>,
    /// Index (0-based) of the first and last samples it was seen in.
    pub first: usize,
    /// Job labels as JSON (`cgroup`, `pod`, `container`, `job`).
    pub labels: serde_json::Value,
    /// See `first`.
    pub last: usize,
}

/// A finding as kept over a recording: the finding as a snapshot of its peak moment shows it,
/// with the samples it spans and its worst severity over time.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedFinding {
    /// The finding at its peak: `severity` is what a snapshot of that moment says (for
    /// peer_mirror, the one its backing implies), `bytes` the peak bytes, `backing` and `message`
    /// those of the peak; a recording keeps no `ratio` or `source`.
    pub peak: Finding,
    /// Worst severity over the whole recording (shown only as "worst over time").
    pub worst_severity: Severity,
    /// First sample index.
    pub first: usize,
    /// Last sample index.
    pub last: usize,
}

impl RecordedFinding {
    /// The finding as a snapshot of its peak moment would have shown it.
    pub fn at_peak(&self) -> Finding {
        self.peak.clone()
    }
}

/// How `show --json` and `diff --json` spell a recorded finding (`gpuledger.show/1`): the peak
/// bytes as `bytes_peak`, no `ratio` or `source`.
#[derive(Serialize)]
struct RecordedFindingJson<'a> {
    kind: Kind,
    severity: Severity,
    worst_severity: Severity,
    pid: Option<u32>,
    rank: Option<u32>,
    device: &'a Option<String>,
    peer: &'a Option<String>,
    bytes_peak: u64,
    backing: Option<Backing>,
    message: &'a str,
    issue: &'a Option<String>,
    first: usize,
    last: usize,
}

impl Serialize for RecordedFinding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = &self.peak;
        RecordedFindingJson {
            kind: f.kind,
            severity: f.severity,
            worst_severity: self.worst_severity,
            pid: f.pid,
            rank: f.rank,
            device: &f.device,
            peer: &f.peer,
            bytes_peak: f.bytes,
            backing: f.backing,
            message: &f.message,
            issue: &f.issue,
            first: self.first,
            last: self.last,
        }
        .serialize(s)
    }
}
