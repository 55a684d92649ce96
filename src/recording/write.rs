//! Writing a recording.

use super::{RecordingError, CHECKPOINT_EVERY, SCHEMA_VERSION};
use crate::findings::Finding;
use crate::ledger::Ledger;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

/// What is known about a recording when it starts.
#[derive(Debug, Clone, Default)]
pub struct RecordingMeta {
    /// The recorded command, or a description such as `--all`.
    pub command: Vec<String>,
    /// Root label.
    pub root: String,
    /// Sampling interval.
    pub interval_ms: u64,
    /// Start time, ms since the epoch.
    pub started_ms: u64,
    /// Kernel version line, where known.
    pub kernel: Option<String>,
}

type Values = (Option<u64>, Option<u64>, Option<u64>);

/// Appends samples to a recording.
#[derive(Debug)]
pub struct Recorder {
    pub(super) conn: Connection,
    pub(super) path: String,
    series: HashMap<(u32, String, String), (i64, Values)>,
    pids: HashSet<u32>,
    devices: HashSet<String>,
    samples: u64,
    checkpointed: Instant,
}

fn to_i64(v: Option<u64>) -> Option<i64> {
    v.map(|x| x.min(i64::MAX as u64) as i64)
}

impl Recorder {
    /// Creates a new recording file (refuses to overwrite one).
    pub fn create(path: &Path, meta: &RecordingMeta) -> Result<Recorder, RecordingError> {
        let command = serde_json::to_string(&meta.command).expect("strings serialise");
        let mut kv = vec![
            ("schema_version", SCHEMA_VERSION.to_string()),
            ("gpuledger_version", env!("CARGO_PKG_VERSION").to_string()),
            ("command", command),
            ("root", meta.root.clone()),
            ("interval_ms", meta.interval_ms.to_string()),
            ("started_ms", meta.started_ms.to_string()),
            (super::writer::RECORDER_KEY, super::writer::this_recorder()),
        ];
        if let Some(k) = &meta.kernel {
            kv.push(("kernel", k.trim().to_string()));
        }
        Ok(Recorder {
            conn: super::create::create(path, &kv)?,
            path: path.display().to_string(),
            series: HashMap::new(),
            pids: HashSet::new(),
            devices: HashSet::new(),
            samples: 0,
            checkpointed: Instant::now(),
        })
    }

    pub(super) fn err(&self) -> impl Fn(rusqlite::Error) -> RecordingError + '_ {
        move |source| RecordingError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Sets a `meta` key (e.g. `exit_code` at the end).
    pub fn set_meta(&mut self, key: &str, value: &str) -> Result<(), RecordingError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
                params![key, value],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Samples written so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Appends one sample in one transaction.
    pub fn add(&mut self, ledger: &Ledger, findings: &[Finding]) -> Result<(), RecordingError> {
        let path = self.path.clone();
        let err = move |source| RecordingError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        let h = &ledger.host;
        let held = h.driver_held();
        tx.execute(
            "INSERT INTO samples(t_ms, mem_total, mem_available, gpu_active, gpu_reclaim, unaccounted, gpu_source, processes,
               driver_held, held_counter, held_counter_bytes, pinned_shmem)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                ledger.time_ms as i64,
                to_i64(h.mem_total),
                to_i64(h.mem_available),
                to_i64(h.gpu_active),
                to_i64(h.gpu_reclaim),
                to_i64(h.unaccounted),
                h.gpu_active_source,
                ledger.processes.len() as i64,
                to_i64(held.map(|d| d.bytes)),
                held.map(|d| d.counter.as_str()),
                to_i64(held.map(|d| d.counter_bytes)),
                to_i64(held.map(|d| d.pinned_shmem))
            ],
        )
        .map_err(&err)?;
        let sample = tx.last_insert_rowid();
        for d in &ledger.devices {
            if self.devices.insert(d.id.clone()) {
                let json = serde_json::to_string(d).expect("plain data");
                tx.execute(
                    "INSERT OR REPLACE INTO devices(id, json) VALUES (?1, ?2)",
                    params![d.id, json],
                )
                .map_err(&err)?;
            }
        }
        for p in &ledger.processes {
            if self.pids.insert(p.pid) {
                let env = serde_json::to_string(&p.env).expect("plain data");
                let labels = serde_json::json!({
                    "cgroup": p.cgroup, "pod": p.labels.pod, "container": p.labels.container, "job": p.labels.job,
                    "namespace": p.labels.namespace, "pod_name": p.labels.pod_name,
                })
                .to_string();
                tx.execute(
                    "INSERT OR REPLACE INTO processes(pid, comm, cmdline, rank, local_rank, env, first_sample, last_sample, labels)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
                    params![p.pid, p.comm, p.cmdline.join(" "), p.rank, p.local_rank, env, sample, labels],
                )
                .map_err(&err)?;
            } else {
                tx.execute(
                    "UPDATE processes SET last_sample = ?2 WHERE pid = ?1",
                    params![p.pid, sample],
                )
                .map_err(&err)?;
            }
            for u in &p.usage {
                let key = (p.pid, u.device.clone(), u.region.clone());
                let values = (u.total, u.resident, u.shared);
                let id = match self.series.get(&key) {
                    Some((_, last)) if *last == values => continue,
                    Some((id, _)) => *id,
                    None => {
                        let existing: Option<i64> = tx
                            .query_row(
                                "SELECT id FROM series WHERE pid = ?1 AND device = ?2 AND region = ?3",
                                params![p.pid, u.device, u.region],
                                |r| r.get(0),
                            )
                            .optional()
                            .map_err(&err)?;
                        match existing {
                            Some(id) => id,
                            None => {
                                tx.execute(
                                    "INSERT INTO series(pid, device, region, class) VALUES (?1, ?2, ?3, ?4)",
                                    params![p.pid, u.device, u.region, u.class.as_str()],
                                )
                                .map_err(&err)?;
                                tx.last_insert_rowid()
                            }
                        }
                    }
                };
                tx.execute(
                    "INSERT INTO points(series, sample, total, resident, shared) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, sample, to_i64(u.total), to_i64(u.resident), to_i64(u.shared)],
                )
                .map_err(&err)?;
                self.series.insert(key, (id, values));
            }
        }
        for f in findings {
            // Backing, message and severity all come from the sample of the peak, so the recorded
            // finding says what a snapshot of that moment says; the worst over time is kept apart.
            tx.execute(
                "INSERT INTO findings(kind, pid, device, peer, severity, rank, bytes_peak, backing, source, message, first_sample, last_sample, worst_severity)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?5)
                 ON CONFLICT(kind, pid, device, peer) DO UPDATE SET
                   last_sample = excluded.last_sample,
                   message = CASE WHEN excluded.bytes_peak >= bytes_peak THEN excluded.message ELSE message END,
                   backing = CASE WHEN excluded.bytes_peak >= bytes_peak THEN excluded.backing ELSE backing END,
                   severity = CASE WHEN excluded.bytes_peak >= bytes_peak THEN excluded.severity ELSE severity END,
                   worst_severity = CASE WHEN excluded.worst_severity = 'critical' OR worst_severity = 'critical' THEN 'critical'
                                   WHEN excluded.worst_severity = 'warning' OR worst_severity = 'warning' THEN 'warning'
                                   ELSE 'info' END,
                   bytes_peak = MAX(bytes_peak, excluded.bytes_peak)",
                params![
                    f.kind.as_str(),
                    f.pid.map(i64::from).unwrap_or(-1),
                    f.device.clone().unwrap_or_default(),
                    // A known issue is keyed by its entry id, kept in the peer column.
                    f.issue.clone().or_else(|| f.peer.clone()).unwrap_or_default(),
                    f.severity.as_str(),
                    f.rank,
                    to_i64(Some(f.bytes)),
                    f.backing.map(super::names::name_of),
                    f.source,
                    f.message,
                    sample
                ],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        self.samples += 1;
        if self.checkpointed.elapsed() >= CHECKPOINT_EVERY {
            // A copy of the main file alone (without -wal) then misses at most these seconds.
            self.conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .map_err(&err)?;
            self.checkpointed = Instant::now();
        }
        Ok(())
    }

    /// Appends kernel log lines, attributed to the latest sample.
    pub fn add_kernel(
        &mut self,
        lines: &[(crate::sources::kmsg::KernelEvent, String)],
    ) -> Result<(), RecordingError> {
        for (kind, msg) in lines {
            self.conn
                .execute(
                    "INSERT INTO kernel_log(sample, kind, message) VALUES ((SELECT COALESCE(MAX(id), 0) FROM samples), ?1, ?2)",
                    params![kind.as_str(), msg],
                )
                .map_err(self.err())?;
        }
        Ok(())
    }

    /// Records how the job ended.
    pub fn finish(
        &mut self,
        ended_ms: u64,
        exit_code: Option<i32>,
        signal: Option<i32>,
    ) -> Result<(), RecordingError> {
        self.set_meta("ended_ms", &ended_ms.to_string())?;
        if let Some(c) = exit_code {
            self.set_meta("exit_code", &c.to_string())?;
        }
        if let Some(s) = signal {
            self.set_meta("signal", &s.to_string())?;
        }
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(self.err())?;
        // Back to a rollback journal: SQLite removes the -wal and -shm files, the recording is one
        // file again, and readers no longer create them beside it. A reader holding the file past
        // the wait leaves it in WAL mode: still complete, so that is not an error.
        self.conn
            .busy_timeout(std::time::Duration::from_secs(2))
            .map_err(self.err())?;
        let _ = self.conn.pragma_update(None, "journal_mode", "DELETE");
        Ok(())
    }
}
