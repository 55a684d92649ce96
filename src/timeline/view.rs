//! `show --pid/--device`: a run summary restricted to some processes and devices. As for a
//! snapshot ([`Filter`]), every number and finding was computed on the whole recording first; the
//! filter only chooses which of them are shown.

use super::RunSummary;
use crate::ledger::{Filter, FilterError};

/// Resolves `--pid` and `--device` against the processes and devices a recording saw (devices in
/// their sorted order, so an index means the same on every `show` of one file) and restricts the
/// summary to them. A pid or device the recording never saw is an error.
pub fn filter_summary(
    s: &RunSummary,
    pids: &[u32],
    devices: &[String],
) -> Result<RunSummary, FilterError> {
    if pids.is_empty() && devices.is_empty() {
        return Ok(s.clone());
    }
    let mut known_pids: Vec<u32> = s.peaks.iter().map(|p| p.pid).collect();
    known_pids.extend(s.ranks.iter().map(|r| r.1));
    let mut ids: Vec<&str> = s.peaks.iter().map(|p| p.device.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let known: Vec<(&str, &[String])> = ids.into_iter().map(|id| (id, &[][..])).collect();
    let f = Filter::resolve_in(&known_pids, &known, pids, devices)?;
    let mut out = s.clone();
    out.peaks
        .retain(|p| f.shows_subject(Some(p.pid), &[Some(p.device.as_str())]));
    out.peer_host.retain(|p| f.shows_pid(p.pid));
    out.ranks.retain(|r| f.shows_pid(r.1));
    out.findings.retain(|x| f.shows(&x.peak));
    // A timeline peer mirror carries its recorded finding's peer: it shows when either device is
    // shown, as in a snapshot.
    out.timeline.retain(|x| f.shows(&x.finding));
    Ok(out)
}
