//! Reading the small tables of a recording: processes, devices, findings, kernel lines.

use super::names;
use super::read_series::Columns;
use super::recorded::{RecordedFinding, RecordedProcess};
use crate::findings::{Backing, Finding, Kind, Severity};
use crate::sources::drm_devices::DeviceInfo;
use rusqlite::Connection;
use std::collections::BTreeMap;

/// Kernel lines kept in memory (all are counted).
pub(super) const KERNEL_LINES: usize = 1000;

/// Which optional parts a file has (files that said version 1 before they existed lack them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub labels: bool,
    pub kernel_log: bool,
    /// The job-evidence tables exist (schema 4).
    pub output: bool,
    /// `meta.schema_version`.
    pub version: i64,
}

impl Layout {
    /// Version 3 added the driver-held sample columns and `findings.worst_severity`.
    pub fn has_driver_held(self) -> bool {
        self.version >= 3
    }

    /// Version 4 added the job's own evidence.
    pub fn has_evidence(self) -> bool {
        self.version >= 4 && self.output
    }
}

pub(super) fn processes(
    conn: &Connection,
    cols: Columns,
    layout: Layout,
) -> rusqlite::Result<Vec<RecordedProcess>> {
    let labels = if layout.labels { "labels" } else { "'{}'" };
    let mut st = conn.prepare(&format!("SELECT pid, comm, cmdline, rank, local_rank, env, first_sample, last_sample, {labels} FROM processes ORDER BY pid"))?;
    let rows = st.query_map([], |r| {
        let env: String = r.get(5)?;
        Ok(RecordedProcess {
            pid: r.get(0)?,
            comm: r.get(1)?,
            cmdline: r.get(2)?,
            rank: r.get(3)?,
            local_rank: r.get(4)?,
            env: serde_json::from_str(&env).unwrap_or_default(),
            first: cols.index(r.get(6)?),
            last: cols.index(r.get(7)?),
            labels: serde_json::from_str(&r.get::<_, String>(8)?).unwrap_or_default(),
        })
    })?;
    rows.collect()
}

pub(super) fn devices(conn: &Connection) -> rusqlite::Result<Vec<DeviceInfo>> {
    let mut st = conn.prepare("SELECT json FROM devices ORDER BY id")?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows
        .filter_map(|j| j.ok().and_then(|j| serde_json::from_str(&j).ok()))
        .collect())
}

pub(super) fn findings(
    conn: &Connection,
    cols: Columns,
    layout: Layout,
) -> rusqlite::Result<Vec<RecordedFinding>> {
    let worst = if layout.has_driver_held() {
        "worst_severity"
    } else {
        "severity"
    };
    let mut st = conn.prepare(&format!(
        "SELECT kind, severity, pid, rank, device, peer, bytes_peak, backing, message, first_sample, last_sample, {worst} FROM findings ORDER BY first_sample, kind, pid",
    ))?;
    let rows = st.query_map([], |r| {
        let pid: i64 = r.get(2)?;
        let device: String = r.get(4)?;
        let peer: String = r.get(5)?;
        let kind = names::kind(&r.get::<_, String>(0)?);
        let stored =
            names::severity(&r.get::<_, String>(1)?).map_err(|e| names::conversion(1, e))?;
        let backing = r
            .get::<_, Option<String>>(7)?
            .map(|b| names::backing(&b).map_err(|e| names::conversion(7, e)))
            .transpose()?;
        let worst_severity =
            names::severity(&r.get::<_, String>(11)?).map_err(|e| names::conversion(11, e))?;
        let severity = if layout.has_driver_held() {
            stored
        } else {
            severity_at_peak_v2(kind, backing, stored)
        };
        // A known issue keeps its entry id in the peer column (the table's key).
        let (peer, issue) = match kind {
            Kind::KnownIssue => (String::new(), (!peer.is_empty()).then_some(peer)),
            _ => (peer, None),
        };
        let peak = Finding {
            kind,
            severity,
            message: r.get(8)?,
            pid: u32::try_from(pid).ok(),
            rank: r.get(3)?,
            device: (!device.is_empty()).then_some(device),
            peer: (!peer.is_empty()).then_some(peer),
            bytes: r.get::<_, i64>(6)?.max(0) as u64,
            ratio: None,
            backing,
            source: None,
            issue,
        };
        Ok(RecordedFinding {
            peak,
            worst_severity,
            first: cols.index(r.get(9)?),
            last: cols.index(r.get(10)?),
        })
    })?;
    rows.collect()
}

/// Versions 1 and 2 stored only the worst severity over time; the severity at the peak of a
/// peer_mirror is the one its backing at the peak implies ([`Backing::severity`]); other kinds
/// keep the stored one.
fn severity_at_peak_v2(kind: Kind, backing: Option<Backing>, stored: Severity) -> Severity {
    match (kind, backing) {
        (Kind::PeerMirror, Some(b)) => b.severity(),
        _ => stored,
    }
}

/// The first [`KERNEL_LINES`] kernel lines and the count of each kind.
pub(super) type KernelLines = (Vec<(usize, String, String)>, BTreeMap<String, usize>);

pub(super) fn kernel(
    conn: &Connection,
    cols: Columns,
    layout: Layout,
) -> rusqlite::Result<KernelLines> {
    if !layout.kernel_log {
        return Ok(Default::default());
    }
    let mut st =
        conn.prepare("SELECT sample, kind, message FROM kernel_log ORDER BY rowid LIMIT ?1")?;
    let lines = st
        .query_map([KERNEL_LINES as i64], |r| {
            Ok((cols.index(r.get(0)?), r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut st = conn.prepare("SELECT kind, COUNT(*) FROM kernel_log GROUP BY kind")?;
    let counts = st
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as usize)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok((lines, counts))
}
