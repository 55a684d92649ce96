//! Reading traced calls back, folded per process × API kind × device in one pass: calls, bytes
//! live at the peak, the largest single call, failed calls by error code, and live bytes over
//! time at each change (bounded to [`LIVE_POINTS`] per row, keeping the peak). Residency (made
//! resident, evicted) and opened IPC ranges count as live bytes of their kind on the target
//! device, like allocations.

use super::names::{self, UnknownValue};
use super::RecordingError;
use gpuledger_trace_wire::{Api, OffReason, Op, Platform, SKIPPED};
use rusqlite::Connection;
use std::collections::{BTreeMap, HashMap};

/// Live-bytes points kept per row.
pub const LIVE_POINTS: usize = 2000;

/// Allocations from this size up are counted for rounding (below it, powers of two are
/// ordinary: pages, small buffers).
pub const ROUNDING_FLOOR: u64 = 1 << 20;

/// One process × API kind × device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CallRow {
    /// Process.
    pub pid: u32,
    /// CUDA or Level Zero (JSON: its recording name, `cuda` or `level_zero`).
    #[serde(serialize_with = "super::serialize_platform")]
    pub platform: Platform,
    /// API kind (JSON: `device`, `host_pinned`, `registered`, `managed`, `pooled`, `vmm`, …).
    #[serde(serialize_with = "super::serialize_api")]
    pub api: Api,
    /// Device ordinal; `None` for host memory.
    pub device: Option<u32>,
    /// Calls of any op (allocations, frees, maps, …).
    pub calls: u64,
    /// Bytes live at the peak (allocated and not yet freed).
    pub peak_live: u64,
    /// Bytes live at the end of the recording.
    pub live_at_end: u64,
    /// The largest single successful allocation.
    pub largest: u64,
    /// Successful allocations of at least [`ROUNDING_FLOOR`] bytes: (count, bytes).
    pub large_allocs: (u64, u64),
    /// Those of them whose size is exactly a power of two: (count, bytes). A caching allocator
    /// that rounds requests up (PyTorch's pinned host allocator) makes every one of them so.
    pub pow2_allocs: (u64, u64),
    /// Failed calls: (error name or code, count).
    pub failed: Vec<(String, u64)>,
    /// Allocations refused for want of memory.
    pub out_of_memory: u64,
    /// The first of them: (t_ms, bytes asked, error name).
    pub first_out_of_memory: Option<(u64, u64, String)>,
    /// (t_ms, live bytes) at each change.
    pub live: Vec<(u64, u64)>,
}

/// The traced calls of a recording.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallTable {
    /// `meta.trace`: "on: LIB" or "off: why".
    pub state: String,
    /// Rows by pid, kind, device.
    pub rows: Vec<CallRow>,
    /// Pids whose tracer started.
    pub started: Vec<u32>,
    /// Pids whose tracer was off, with why.
    pub off: Vec<(u32, String)>,
    /// Events lost between the job and the recording.
    pub dropped: u64,
    /// Events received but not stored (the recording's row limit).
    pub not_stored: u64,
    /// Events sent by processes outside the job, refused (`meta.trace_foreign`).
    pub foreign: u64,
    /// `meta.trace_level_zero`: whether the Level Zero interposer went in ("on" or "off: why");
    /// `None` in recordings made before it existed.
    pub level_zero: Option<String>,
    /// Peer residency calls the interposer answered without reaching the driver
    /// (`experiment --control skip-peer-residency`).
    pub skipped_peer_residency: u64,
}

type Key = (u32, Platform, Api, Option<u32>);

fn name_of(platform: Platform, code: i32) -> String {
    match platform.result_name(code) {
        Some(n) => format!("{n} ({code})"),
        None => format!("error {code}"),
    }
}

fn fold(row: &mut CallRow, platform: Platform, op: Op, bytes: u64, result: i32, t_ms: u64) {
    row.calls += 1;
    if result != 0 {
        let name = name_of(platform, result);
        if op == Op::Alloc && platform.is_out_of_memory(result) {
            row.out_of_memory += 1;
            if row.first_out_of_memory.is_none() {
                row.first_out_of_memory = Some((t_ms, bytes, name.clone()));
            }
        }
        match row.failed.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => row.failed.push((name, 1)),
        }
        return;
    }
    apply(row, op, bytes, t_ms);
}

/// Adds (allocation, residency, opened range) or takes away (free, eviction, close) live bytes.
fn apply(row: &mut CallRow, op: Op, bytes: u64, t_ms: u64) {
    match op {
        Op::Alloc | Op::MakeResident | Op::OpenIpc => {
            row.live_at_end = row.live_at_end.saturating_add(bytes);
            row.largest = row.largest.max(bytes);
            if op == Op::Alloc && bytes >= ROUNDING_FLOOR {
                add_count(&mut row.large_allocs, bytes);
                if bytes.is_power_of_two() {
                    add_count(&mut row.pow2_allocs, bytes);
                }
            }
        }
        Op::Free | Op::Evict | Op::CloseIpc => {
            row.live_at_end = row.live_at_end.saturating_sub(bytes)
        }
        _ => return,
    }
    row.peak_live = row.peak_live.max(row.live_at_end);
    if row.live.len() < LIVE_POINTS || row.live_at_end == row.peak_live {
        if row.live.len() >= LIVE_POINTS {
            row.live.pop();
        }
        row.live.push((t_ms, row.live_at_end));
    }
}

fn add_count(c: &mut (u64, u64), bytes: u64) {
    c.0 += 1;
    c.1 = c.1.saturating_add(bytes);
}

/// One stored call.
struct Stored {
    t_ms: u64,
    pid: u32,
    platform: Platform,
    api: Api,
    op: Op,
    device: Option<u32>,
    bytes: u64,
    address: u64,
    result: i32,
    flags: u32,
}

/// A range made resident on a device, and the row it counts in.
struct Resident {
    device: Option<u32>,
    row: Key,
    bytes: u64,
}

/// The rows being folded, and the ranges made resident: a range made resident again on the same
/// device adds nothing, an eviction takes away what was made resident, and freeing a range ends
/// its residency everywhere.
#[derive(Default)]
struct Folder {
    rows: BTreeMap<Key, CallRow>,
    /// (pid, address) → where that range is resident.
    resident: HashMap<(u32, u64), Vec<Resident>>,
    skipped: u64,
}

impl Folder {
    fn row(&mut self, (pid, platform, api, device): Key) -> &mut CallRow {
        self.rows
            .entry((pid, platform, api, device))
            .or_insert_with(|| CallRow {
                pid,
                platform,
                api,
                device,
                calls: 0,
                peak_live: 0,
                live_at_end: 0,
                largest: 0,
                large_allocs: (0, 0),
                pow2_allocs: (0, 0),
                failed: Vec::new(),
                out_of_memory: 0,
                first_out_of_memory: None,
                live: Vec::new(),
            })
    }

    /// The bytes a successful residency call adds or takes away; `None` when it changes nothing
    /// (made resident again, or evicted where it was not resident).
    fn residency(&mut self, s: &Stored, key: Key) -> Option<u64> {
        let at = (s.pid, s.address);
        let here = self.resident.entry(at).or_default();
        let i = here.iter().position(|r| r.device == s.device);
        let bytes = match (s.op, i) {
            (Op::MakeResident, None) => {
                here.push(Resident {
                    device: s.device,
                    row: key,
                    bytes: s.bytes,
                });
                Some(s.bytes)
            }
            (Op::Evict, Some(i)) => Some(here.swap_remove(i).bytes),
            _ => None,
        };
        if here.is_empty() {
            self.resident.remove(&at);
        }
        bytes
    }

    fn add(&mut self, s: &Stored) {
        let key = (s.pid, s.platform, s.api, s.device);
        if s.api == Api::PeerResidency && s.flags & SKIPPED != 0 {
            // Answered by the interposer: a call, but nothing made resident.
            self.skipped += 1;
            self.row(key).calls += 1;
            return;
        }
        let mut bytes = s.bytes;
        match s.op {
            Op::MakeResident | Op::Evict if s.result == 0 => match self.residency(s, key) {
                Some(b) => bytes = b,
                None => {
                    self.row(key).calls += 1;
                    return;
                }
            },
            Op::Free if s.result == 0 => {
                let gone = self.resident.remove(&(s.pid, s.address));
                for r in gone.unwrap_or_default() {
                    apply(self.row(r.row), Op::Evict, r.bytes, s.t_ms);
                }
            }
            _ => {}
        }
        fold(self.row(key), s.platform, s.op, bytes, s.result, s.t_ms);
    }
}

/// The traced calls of a recording, read over its open connection `conn` (its `meta` already
/// read; `path` names it in errors); `None` when it has none (not traced, or written before
/// schema version 5).
pub(super) fn calls(
    conn: &Connection,
    meta: &BTreeMap<String, String>,
    path: &str,
) -> Result<Option<CallTable>, RecordingError> {
    let sql = |source| RecordingError::Sqlite {
        path: path.to_string(),
        source,
    };
    let unknown = |source: UnknownValue| RecordingError::UnknownValue {
        path: path.to_string(),
        source,
    };
    let Some(state) = meta.get("trace").cloned() else {
        return Ok(None);
    };
    let num = |k: &str| meta.get(k).and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut table = CallTable {
        state,
        dropped: num("trace_dropped"),
        not_stored: num("trace_not_stored"),
        foreign: num("trace_foreign"),
        level_zero: meta.get("trace_level_zero").cloned(),
        ..Default::default()
    };
    let mut folder = Folder::default();
    let mut st = conn
        .prepare("SELECT t_ms, pid, platform, api, op, device, bytes, result, flags, address FROM api_calls ORDER BY rowid")
        .map_err(sql)?;
    let mut q = st.query([]).map_err(sql)?;
    while let Some(r) = q.next().map_err(sql)? {
        let text = |i: usize| r.get::<_, String>(i);
        let (pf, a, o) = (
            text(2).map_err(sql)?,
            text(3).map_err(sql)?,
            text(4).map_err(sql)?,
        );
        let platform = names::platform(&pf).map_err(unknown)?;
        let api = names::api(&a).map_err(unknown)?;
        let op = names::op(&o).map_err(unknown)?;
        let pid: u32 = r.get(1).map_err(sql)?;
        let result: i32 = r.get(7).map_err(sql)?;
        match op {
            Op::Started => table.started.push(pid),
            Op::Off => {
                let why = OffReason::from_code(result).map_or("unknown reason", |r| r.describe());
                table.off.push((pid, why.to_string()));
            }
            Op::Dropped => {}
            _ => folder.add(&Stored {
                t_ms: r.get::<_, i64>(0).map_err(sql)?.max(0) as u64,
                pid,
                platform,
                api,
                op,
                device: r.get(5).map_err(sql)?,
                bytes: r.get::<_, i64>(6).map_err(sql)?.max(0) as u64,
                address: r.get::<_, i64>(9).map_err(sql)? as u64,
                result,
                flags: r.get(8).map_err(sql)?,
            }),
        }
    }
    table.skipped_peer_residency = folder.skipped;
    table.rows = folder.rows.into_values().collect();
    Ok(Some(table))
}

/// A host-pinned row folded from successful allocations of `sizes` (then frees of `freed` of
/// them), as the reader folds stored calls: for rules tested on constructed traces.
#[cfg(test)]
pub(crate) fn pinned_row(pid: u32, sizes: &[u64], freed: usize) -> CallRow {
    let mut f = Folder::default();
    let row = f.row((pid, Platform::Cuda, Api::HostPinned, None));
    for (i, &b) in sizes.iter().enumerate() {
        fold(row, Platform::Cuda, Op::Alloc, b, 0, i as u64);
    }
    for &b in sizes.iter().take(freed) {
        fold(row, Platform::Cuda, Op::Free, b, 0, sizes.len() as u64);
    }
    row.clone()
}
