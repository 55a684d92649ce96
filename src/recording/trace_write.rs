//! Writing traced calls into a recording (`api_calls`, `meta.trace*`: `trace_dropped`,
//! `trace_not_stored`, `trace_foreign`).
//!
//! A free names only an address; [`Resolver`] remembers each process's live allocations so
//! that a free is stored with the kind, device and bytes of what it freed (a `cuMemFree` of
//! managed memory counts as managed). Status events are stored too: `started`, `off` (with its
//! reason), `dropped` (events the tracer could not send).

use super::trace::Losses;
use super::{Recorder, RecordingError};
use gpuledger_trace_wire::{Api, Event, Op};
use rusqlite::params;
use std::collections::HashMap;

/// Rows stored at most; further calls are counted in `meta.trace_not_stored`.
pub const MAX_ROWS: u64 = 2_000_000;

/// What a live allocation was.
#[derive(Debug, Clone, Copy)]
struct Live {
    api: Api,
    device: Option<u32>,
    bytes: u64,
}

/// Live allocations per process, to resolve frees.
#[derive(Debug, Default)]
pub struct Resolver {
    /// (pid, VMM handle namespace, address) → allocation.
    live: HashMap<(u32, bool, u64), Live>,
}

impl Resolver {
    /// Fills in a free's kind, device and bytes from the allocation it frees; remembers a
    /// successful allocation.
    pub fn resolve(&mut self, e: &mut Event) {
        let key = (e.pid, e.api == Api::Vmm, e.address);
        match (e.op, e.result) {
            (Op::Alloc, 0) if e.address != 0 => {
                let live = Live {
                    api: e.api,
                    device: e.device,
                    bytes: e.bytes,
                };
                self.live.insert(key, live);
            }
            (Op::Free, 0) => {
                if let Some(l) = self.live.remove(&key) {
                    e.api = l.api;
                    e.device = l.device;
                    e.bytes = l.bytes;
                }
            }
            _ => {}
        }
    }

    /// Host bytes registered in place (`cuMemHostRegister`) and still live, per process.
    pub fn registered_by_pid(&self) -> std::collections::BTreeMap<u32, u64> {
        let mut out = std::collections::BTreeMap::new();
        for ((pid, _, _), l) in &self.live {
            if l.api == Api::Registered {
                *out.entry(*pid).or_default() += l.bytes;
            }
        }
        out
    }
}

impl Recorder {
    /// Stores traced events (resolved by `resolver`) in one transaction; `losses` counts the
    /// events that never reached gpuledger or came from outside the job.
    pub fn add_calls(
        &mut self,
        events: &mut [Event],
        losses: Losses,
        resolver: &mut Resolver,
    ) -> Result<(), RecordingError> {
        if events.is_empty() && !losses.any() {
            return Ok(());
        }
        let path = self.path.clone();
        let err = move |source| RecordingError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        // Rows are only ever appended: the last rowid is their count, without a scan.
        let stored: u64 = tx
            .query_row("SELECT coalesce(max(rowid), 0) FROM api_calls", [], |r| {
                r.get(0)
            })
            .map_err(&err)?;
        let room = MAX_ROWS.saturating_sub(stored) as usize;
        let mut dropped = losses.lost;
        {
            let mut st = tx
                .prepare_cached("INSERT INTO api_calls(t_ms, pid, tid, platform, api, op, device, bytes, address, flags, result) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")
                .map_err(&err)?;
            for (i, e) in events.iter_mut().enumerate() {
                resolver.resolve(e);
                if e.op == Op::Dropped {
                    dropped += e.bytes;
                }
                if i >= room {
                    continue;
                }
                st.execute(params![
                    (e.t_ns / 1_000_000) as i64,
                    e.pid,
                    e.tid,
                    e.platform.name(),
                    e.api.name(),
                    e.op.name(),
                    e.device,
                    e.bytes.min(i64::MAX as u64) as i64,
                    e.address as i64,
                    e.flags,
                    e.result,
                ])
                .map_err(&err)?;
            }
        }
        let not_stored = events.len().saturating_sub(room) as u64;
        for (key, n) in [
            ("trace_dropped", dropped),
            ("trace_not_stored", not_stored),
            ("trace_foreign", losses.foreign),
        ] {
            if n > 0 {
                tx.execute(
                    "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + ?2",
                    params![key, n as i64],
                )
                .map_err(&err)?;
            }
        }
        tx.commit().map_err(&err)
    }
}
