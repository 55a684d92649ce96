//! Reading a recording back.

use super::{RecordingError, SCHEMA_VERSION};
use crate::ledger::MemClass;
use crate::sources::drm_devices::DeviceInfo;
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;
use std::path::Path;

/// Host counters of one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSample {
    /// Sample time, ms since the epoch.
    pub t_ms: u64,
    /// MemTotal.
    pub mem_total: Option<u64>,
    /// MemAvailable.
    pub mem_available: Option<u64>,
    /// GPUActive or nr_gpu_active.
    pub gpu_active: Option<u64>,
    /// GPUReclaim.
    pub gpu_reclaim: Option<u64>,
    /// Unaccounted residual.
    pub unaccounted: Option<u64>,
    /// Which counter `gpu_active` came from.
    pub gpu_source: Option<String>,
    /// Processes seen.
    pub processes: u64,
}

impl HostSample {
    /// Driver-held host memory: GPUActive when the kernel has it, else unaccounted.
    pub fn driver_held(&self) -> Option<u64> {
        self.gpu_active.or(self.unaccounted)
    }
}

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

/// One (pid, device, region) series, filled forward to one value per sample in its lifetime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// Pid.
    pub pid: u32,
    /// Device id.
    pub device: String,
    /// Region name.
    pub region: String,
    /// Class.
    pub class: MemClass,
    /// Resident bytes per sample index (None before the first point or after the process left).
    pub resident: Vec<Option<u64>>,
}

/// A finding as kept over a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedFinding {
    /// Kind name.
    pub kind: String,
    /// Worst severity.
    pub severity: String,
    /// Pid.
    pub pid: Option<u32>,
    /// Rank.
    pub rank: Option<u32>,
    /// Device.
    pub device: Option<String>,
    /// Peer.
    pub peer: Option<String>,
    /// Peak bytes.
    pub bytes_peak: u64,
    /// Backing at the peak.
    pub backing: Option<String>,
    /// Message at the peak.
    pub message: String,
    /// First and last sample index.
    pub first: usize,
    /// See `first`.
    pub last: usize,
}

/// A whole recording in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// `meta` table.
    pub meta: BTreeMap<String, String>,
    /// Host samples in order.
    pub samples: Vec<HostSample>,
    /// Processes.
    pub processes: Vec<RecordedProcess>,
    /// Devices.
    pub devices: Vec<DeviceInfo>,
    /// Series.
    pub series: Vec<Series>,
    /// Findings.
    pub findings: Vec<RecordedFinding>,
    /// Kernel log evidence: (sample index, kind, message).
    pub kernel: Vec<(usize, String, String)>,
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
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => (b.t_ms.saturating_sub(a.t_ms)) as f64 / 1000.0,
            _ => 0.0,
        }
    }

    /// Seconds since the first sample, for sample index `i`.
    pub fn t_s(&self, i: usize) -> f64 {
        let t0 = self.samples.first().map(|s| s.t_ms).unwrap_or(0);
        self.samples
            .get(i)
            .map(|s| s.t_ms.saturating_sub(t0) as f64 / 1000.0)
            .unwrap_or(0.0)
    }

    /// Number of kernel lines of a kind (`page_allocation_failure`, `oom_kill`, `driver`).
    pub fn kernel_count(&self, kind: &str) -> usize {
        self.kernel.iter().filter(|k| k.1 == kind).count()
    }

    /// The process record of a pid.
    pub fn process(&self, pid: u32) -> Option<&RecordedProcess> {
        self.processes.iter().find(|p| p.pid == pid)
    }
}

/// Opens and reads a recording (read-only; a recorder may still be writing it).
pub fn open(path: &Path) -> Result<Recording, RecordingError> {
    let p = path.display().to_string();
    let not = |why: String| RecordingError::NotARecording {
        path: p.clone(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| not(e.to_string()))?;
    if !meta.is_file() {
        return Err(not("not a regular file".into()));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| not(e.to_string()))?;
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
    if version != SCHEMA_VERSION {
        return Err(not(format!(
            "schema version {version}, this gpuledger reads {SCHEMA_VERSION}"
        )));
    }
    read_all(&conn, meta).map_err(|e| RecordingError::Sqlite {
        path: p.clone(),
        source: e,
    })
}

fn u(v: Option<i64>) -> Option<u64> {
    v.map(|x| x.max(0) as u64)
}

fn read_all(conn: &Connection, meta: BTreeMap<String, String>) -> rusqlite::Result<Recording> {
    let mut st = conn.prepare(
        "SELECT id, t_ms, mem_total, mem_available, gpu_active, gpu_reclaim, unaccounted, gpu_source, processes FROM samples ORDER BY id",
    )?;
    let mut index: BTreeMap<i64, usize> = BTreeMap::new();
    let mut samples = Vec::new();
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            HostSample {
                t_ms: r.get::<_, i64>(1)?.max(0) as u64,
                mem_total: u(r.get(2)?),
                mem_available: u(r.get(3)?),
                gpu_active: u(r.get(4)?),
                gpu_reclaim: u(r.get(5)?),
                unaccounted: u(r.get(6)?),
                gpu_source: r.get(7)?,
                processes: r.get::<_, i64>(8)?.max(0) as u64,
            },
        ))
    })?;
    for row in rows {
        let (id, s) = row?;
        index.insert(id, samples.len());
        samples.push(s);
    }
    let idx = |id: i64| index.get(&id).copied().unwrap_or(0);

    let mut st = conn.prepare("SELECT pid, comm, cmdline, rank, local_rank, env, first_sample, last_sample, labels FROM processes ORDER BY pid")?;
    let processes = st
        .query_map([], |r| {
            let env: String = r.get(5)?;
            Ok(RecordedProcess {
                pid: r.get(0)?,
                comm: r.get(1)?,
                cmdline: r.get(2)?,
                rank: r.get(3)?,
                local_rank: r.get(4)?,
                env: serde_json::from_str(&env).unwrap_or_default(),
                first: idx(r.get(6)?),
                last: idx(r.get(7)?),
                labels: serde_json::from_str(&r.get::<_, String>(8)?).unwrap_or_default(),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;

    let mut st = conn.prepare("SELECT json FROM devices ORDER BY id")?;
    let devices = st
        .query_map([], |r| r.get::<_, String>(0))?
        .filter_map(|j| j.ok().and_then(|j| serde_json::from_str(&j).ok()))
        .collect();

    let mut st = conn.prepare("SELECT id, pid, device, region, class FROM series ORDER BY id")?;
    let heads = st
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut pts =
        conn.prepare("SELECT sample, resident FROM points WHERE series = ?1 ORDER BY sample")?;
    let mut series = Vec::new();
    for (id, pid, device, region, class) in heads {
        let points = pts
            .query_map([id], |r| Ok((idx(r.get(0)?), u(r.get(1)?))))?
            .collect::<Result<Vec<_>, _>>()?;
        let last = processes
            .iter()
            .find(|p| p.pid == pid)
            .map(|p| p.last)
            .unwrap_or(samples.len());
        let mut resident = vec![None; samples.len()];
        let mut cur: Option<u64> = None;
        let mut it = points.into_iter().peekable();
        for (i, slot) in resident.iter_mut().enumerate().take(last + 1) {
            while let Some((_, v)) = it.next_if(|(s, _)| *s <= i) {
                cur = v.or(Some(0));
            }
            *slot = cur;
        }
        let class = match class.as_str() {
            "device" => MemClass::Device,
            "stolen" => MemClass::Stolen,
            _ => MemClass::Host,
        };
        series.push(Series {
            pid,
            device,
            region,
            class,
            resident,
        });
    }

    let mut st = conn.prepare(
        "SELECT kind, severity, pid, rank, device, peer, bytes_peak, backing, message, first_sample, last_sample FROM findings ORDER BY first_sample, kind, pid",
    )?;
    let findings = st
        .query_map([], |r| {
            let pid: i64 = r.get(2)?;
            let device: String = r.get(4)?;
            let peer: String = r.get(5)?;
            Ok(RecordedFinding {
                kind: r.get(0)?,
                severity: r.get(1)?,
                pid: (pid >= 0).then_some(pid as u32),
                rank: r.get(3)?,
                device: (!device.is_empty()).then_some(device),
                peer: (!peer.is_empty()).then_some(peer),
                bytes_peak: r.get::<_, i64>(6)?.max(0) as u64,
                backing: r.get(7)?,
                message: r.get(8)?,
                first: idx(r.get(9)?),
                last: idx(r.get(10)?),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    // Tolerate recordings written before the kernel_log table existed.
    let kernel = match conn.prepare("SELECT sample, kind, message FROM kernel_log ORDER BY rowid") {
        Ok(mut st) => st
            .query_map([], |r| Ok((idx(r.get(0)?), r.get(1)?, r.get(2)?)))?
            .collect::<Result<Vec<_>, _>>()?,
        Err(_) => Vec::new(),
    };
    Ok(Recording {
        meta,
        samples,
        processes,
        devices,
        series,
        findings,
        kernel,
    })
}
