//! Reading a recording back: meta and the small tables whole, samples and usage points folded
//! (see `read_host`, `read_series`), so memory stays bounded whatever the recording's length.

use super::read_check::{check, MAX_GROUP_SERIES};
use super::read_host::{fold_host, HostSummary};
use super::read_rows::{self, Layout};
use super::read_series::{fold_group, ClassSeries, Columns, Life};
use super::recorded::{RecordedFinding, RecordedProcess};
use super::{RecordingError, UnknownValue, OLDEST_READABLE, SCHEMA_VERSION};
use crate::ledger::MemClass;
use crate::sources::drm_devices::DeviceInfo;
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// A recording, read back with bounded memory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Recording {
    /// `meta` table.
    pub meta: BTreeMap<String, String>,
    /// Host counters, folded.
    pub host: HostSummary,
    /// Sample indices run from 0 to `span - 1`.
    pub span: usize,
    /// Processes, in pid order.
    pub processes: Vec<RecordedProcess>,
    /// Devices.
    pub devices: Vec<DeviceInfo>,
    /// One series per (pid, device, class), folded, in that order.
    pub series: Vec<ClassSeries>,
    /// Findings.
    pub findings: Vec<RecordedFinding>,
    /// Kernel log evidence: (sample index, kind, message), the first lines only.
    pub kernel: Vec<(usize, String, String)>,
    /// Kernel lines by kind, all of them.
    pub kernel_counts: BTreeMap<String, usize>,
    /// Times (ms since the epoch) of the sample indices that processes, findings and series name.
    pub times: BTreeMap<usize, u64>,
    /// What the job's own output showed (empty before schema 4 and in attach modes).
    pub evidence: super::JobEvidence,
    /// A `-wal` file lay beside the recording: its recorder was killed, or is still writing. The
    /// file and its `-wal` were read from a private copy (or, where the `-wal` could not be copied,
    /// the file alone, missing the last seconds that only the `-wal` holds).
    pub not_closed: bool,
    /// The traced calls, folded per process × API kind × device (`None` when not traced, or
    /// written before schema version 5).
    pub calls: Option<super::CallTable>,
}

impl Recording {
    /// The recorded command.
    pub fn command(&self) -> Vec<String> {
        self.meta
            .get("command")
            .and_then(|c| serde_json::from_str(c).ok())
            .unwrap_or_default()
    }

    /// Seconds from the first to the last sample.
    pub fn duration_s(&self) -> f64 {
        self.host.last_ms.saturating_sub(self.host.first_ms) as f64 / 1000.0
    }

    /// Seconds since the first sample, for sample index `i` (one that the recording's processes,
    /// findings or series name; another index gets the time of the nearest such index before it).
    pub fn t_s(&self, i: usize) -> f64 {
        let t = self
            .times
            .range(..=i)
            .next_back()
            .map(|(_, t)| *t)
            .unwrap_or(self.host.first_ms);
        t.saturating_sub(self.host.first_ms) as f64 / 1000.0
    }

    /// Number of kernel lines of a kind (`page_allocation_failure`, `oom_kill`, `driver`).
    pub fn kernel_count(&self, kind: &str) -> usize {
        self.kernel_counts.get(kind).copied().unwrap_or(0)
    }

    /// The process record of a pid (a binary search: `processes` is in pid order).
    pub fn process(&self, pid: u32) -> Option<&RecordedProcess> {
        let k = self.processes.partition_point(|p| p.pid < pid);
        self.processes.get(k).filter(|p| p.pid == pid)
    }

    /// The series of one class of a process on a device (a binary search: `series` is in
    /// (pid, device, class) order).
    pub fn class_series(&self, pid: u32, device: &str, class: MemClass) -> Option<&ClassSeries> {
        let key = (pid, device, class);
        let k = self
            .series
            .partition_point(|s| (s.pid, s.device.as_str(), s.class) < key);
        self.series
            .get(k)
            .filter(|s| (s.pid, s.device.as_str(), s.class) == key)
    }
}

/// The reader's error for a file that cannot be opened as a recording: what happened (permission
/// denied, truncated, not a database), never the file's bytes.
fn open_error(path: &str, e: super::read_open::OpenError) -> RecordingError {
    use super::read_open::OpenError;
    let path = path.to_string();
    match e {
        OpenError::Io(source) => RecordingError::Unreadable { path, source },
        OpenError::NotSqlite(why) => RecordingError::NotARecording { path, why },
        OpenError::Truncated(why) => RecordingError::Damaged {
            path,
            why: format!("truncated: {why}"),
        },
        OpenError::Sqlite(e) => match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseCorrupt) => RecordingError::Damaged {
                path,
                why: e.to_string(),
            },
            _ => RecordingError::NotARecording {
                path,
                why: e.to_string(),
            },
        },
    }
}

/// Opens and reads a recording without writing to it or beside it (a recorder may still be
/// writing it).
pub fn open(path: &Path) -> Result<Recording, RecordingError> {
    let p = path.display().to_string();
    let not = |why: String| RecordingError::NotARecording {
        path: p.clone(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|source| RecordingError::Unreadable {
        path: p.clone(),
        source,
    })?;
    if !meta.is_file() {
        return Err(not("not a regular file".into()));
    }
    let opened = super::read_open::open(path).map_err(|e| open_error(&p, e))?;
    let conn = &opened.conn;
    let mut layout = check(conn).map_err(not)?;
    let meta: BTreeMap<String, String> = (|| {
        let mut st = conn.prepare("SELECT key, value FROM meta")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<Result<_, _>>()
    })()
    .map_err(|e| not(e.to_string()))?;
    let version: i64 = meta
        .get("schema_version")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| not("no schema_version in meta".into()))?;
    if version > SCHEMA_VERSION {
        return Err(RecordingError::Newer {
            path: p,
            found: version,
        });
    }
    if version < OLDEST_READABLE {
        return Err(not(format!("schema version {version} is unknown")));
    }
    layout.version = version;
    let mut rec = read_all(conn, meta, layout).map_err(|source| read_error(p.clone(), source))?;
    rec.not_closed = opened.not_closed;
    rec.calls = super::trace_read::calls(conn, &rec.meta, &p)?;
    Ok(rec)
}

/// A value the reader could not convert to its enum is its own error, not SQLite's.
fn read_error(path: String, source: rusqlite::Error) -> RecordingError {
    match source {
        rusqlite::Error::FromSqlConversionFailure(i, t, e) => match e.downcast::<UnknownValue>() {
            Ok(unknown) => RecordingError::UnknownValue {
                path,
                source: *unknown,
            },
            Err(e) => RecordingError::Sqlite {
                path,
                source: rusqlite::Error::FromSqlConversionFailure(i, t, e),
            },
        },
        source => RecordingError::Sqlite { path, source },
    }
}

fn read_all(
    conn: &Connection,
    meta: BTreeMap<String, String>,
    layout: Layout,
) -> rusqlite::Result<Recording> {
    let (first_id, last_id): (Option<i64>, Option<i64>) =
        conn.query_row("SELECT MIN(id), MAX(id) FROM samples", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    // Only a count: nothing is allocated per sample, whatever the ids claim.
    let span = match (first_id, last_id) {
        (Some(a), Some(b)) => {
            usize::try_from(b.saturating_sub(a)).map_or(usize::MAX, |d| d.saturating_add(1))
        }
        _ => 0,
    };
    let cols = Columns {
        first_id: first_id.unwrap_or(0),
        span,
    };
    let processes = read_rows::processes(conn, cols, layout)?;
    let devices = read_rows::devices(conn)?;
    let findings = read_rows::findings(conn, cols, layout)?;
    let (kernel, kernel_counts) = read_rows::kernel(conn, cols, layout)?;
    conn.set_prepared_statement_cache_capacity(MAX_GROUP_SERIES + 16);
    let series = read_series(conn, &processes, cols)?;
    let end_job = processes.iter().map(|p| p.last).max();
    let mut wanted: BTreeSet<usize> = [0].into();
    wanted.extend(processes.iter().flat_map(|p| [p.first, p.last]));
    wanted.extend(findings.iter().flat_map(|f| [f.first, f.last]));
    wanted.extend(kernel.iter().map(|k| k.0));
    wanted.extend(end_job.map(|e| e.saturating_add(1)));
    for s in &series {
        wanted.extend(s.last_up);
        for h in [s.longest, s.last_hold, s.before_last]
            .into_iter()
            .flatten()
        {
            wanted.extend([h.from, h.to]);
        }
        wanted.extend(s.steps.values().map(|st| st.first));
    }
    let (host, times) = fold_host(conn, cols, layout, end_job, &wanted)?;
    let evidence = super::read_output::evidence(conn, &meta, layout)?;
    Ok(Recording {
        evidence,
        meta,
        host,
        span,
        processes,
        devices,
        series,
        findings,
        kernel,
        kernel_counts,
        times,
        not_closed: false,
        calls: None,
    })
}

/// Groups the series rows by (pid, device, class) in one ordered pass (the rows come sorted, so
/// a group ends where the key changes) and folds each group; a process's life is looked up by pid
/// in a map.
fn read_series(
    conn: &Connection,
    processes: &[RecordedProcess],
    cols: Columns,
) -> rusqlite::Result<Vec<ClassSeries>> {
    let end = cols.span.saturating_sub(1);
    let lives: HashMap<u32, Life> = processes
        .iter()
        .map(|p| {
            let life = Life {
                first: p.first,
                last: p.last.min(end),
            };
            (p.pid, life)
        })
        .collect();
    let whole = Life {
        first: 0,
        last: end,
    };
    let mut out = Vec::new();
    let mut group: Option<((u32, String, String), Vec<i64>)> = None;
    let mut st =
        conn.prepare("SELECT id, pid, device, class FROM series ORDER BY pid, device, class, id")?;
    let mut rows = st.query([])?;
    loop {
        let row = rows.next()?;
        let key = match row {
            Some(r) => Some(((r.get(1)?, r.get(2)?, r.get(3)?), r.get::<_, i64>(0)?)),
            None => None,
        };
        let same = matches!((&group, &key), (Some((g, _)), Some((k, _))) if g == k);
        if !same {
            if let Some(((pid, device, class), ids)) = group.take() {
                let class = match class.as_str() {
                    "device" => MemClass::Device,
                    "stolen" => MemClass::Stolen,
                    _ => MemClass::Host,
                };
                let life = lives.get(&pid).copied().unwrap_or(whole);
                out.push(fold_group(conn, (pid, device, class), &ids, life, cols)?);
            }
        }
        match (key, &mut group) {
            (Some((_, id)), Some((_, ids))) => ids.push(id),
            (Some((k, id)), None) => group = Some((k, vec![id])),
            (None, _) => break,
        }
    }
    // Class names this build does not know read as host, which can break the order.
    out.sort_by(|a, b| (a.pid, &a.device, a.class).cmp(&(b.pid, &b.device, b.class)));
    Ok(out)
}
