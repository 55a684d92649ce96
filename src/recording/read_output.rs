//! Reading the job's own evidence back; recordings before schema 4, and runs whose output was
//! not captured (`--pid`, `--all`), read as empty evidence. Every table is read with a limit, so a
//! file written by something else cannot make the reader hold more than a recorder writes.

use super::names::{conversion, parse};
use super::read_rows::Layout;
use crate::job_output::{
    plausible, ErrorLine, Marker, OutputLine, Stream, MAX_ERROR_LINES, MAX_MARKERS,
    MAX_RATE_POINTS, TAIL_LINES,
};
use rusqlite::{Connection, Row};
use serde::Serialize;
use std::collections::BTreeMap;

/// One `--rate` series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateSeries {
    /// Its name.
    pub name: String,
    /// Its unit, when given.
    pub unit: Option<String>,
    /// (t_ms since the epoch, value), in time order.
    pub points: Vec<(u64, f64)>,
    /// Points seen past the bound and not kept.
    pub dropped: u64,
}

/// What a recording kept of the job's output.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct JobEvidence {
    /// Whether the output was captured at all.
    pub captured: bool,
    /// Lines of output seen.
    pub lines: u64,
    /// Runtime/driver error lines kept, in time order.
    pub errors: Vec<ErrorLine>,
    /// Error lines seen past the bound.
    pub errors_dropped: u64,
    /// The last lines of the output.
    pub tail: Vec<OutputLine>,
    /// `--rate` series.
    pub rates: Vec<RateSeries>,
    /// Phase markers.
    pub markers: Vec<Marker>,
}

fn stream_at(r: &Row, i: usize) -> rusqlite::Result<Stream> {
    let s: String = r.get(i)?;
    parse("output stream", &s).map_err(|e| conversion(i, e))
}

fn u64_at(r: &Row, i: usize) -> rusqlite::Result<u64> {
    Ok(u64::try_from(r.get::<_, i64>(i)?).unwrap_or(0))
}

/// Reads the evidence tables.
pub(super) fn evidence(
    conn: &Connection,
    meta: &BTreeMap<String, String>,
    layout: Layout,
) -> rusqlite::Result<JobEvidence> {
    if !layout.has_evidence() || !meta.contains_key("output_captured") {
        return Ok(JobEvidence::default());
    }
    let count = |k: &str| meta.get(k).and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut st =
        conn.prepare("SELECT t_ms, stream, kind, text FROM output_lines ORDER BY rowid LIMIT ?1")?;
    let errors = st
        .query_map([MAX_ERROR_LINES as i64], |r| {
            let kind: String = r.get(2)?;
            Ok(ErrorLine {
                kind: parse("output error kind", &kind).map_err(|e| conversion(2, e))?,
                line: OutputLine {
                    t_ms: u64_at(r, 0)?,
                    stream: stream_at(r, 1)?,
                    text: r.get(3)?,
                },
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut st = conn.prepare(
        "SELECT t_ms, stream, text FROM (SELECT * FROM output_tail ORDER BY seq DESC LIMIT ?1) ORDER BY seq",
    )?;
    let tail = st
        .query_map([TAIL_LINES as i64], |r| {
            Ok(OutputLine {
                t_ms: u64_at(r, 0)?,
                stream: stream_at(r, 1)?,
                text: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut st = conn.prepare("SELECT t_ms, text FROM markers ORDER BY t_ms, rowid LIMIT ?1")?;
    let markers = st
        .query_map([MAX_MARKERS as i64], |r| {
            Ok(Marker {
                t_ms: u64_at(r, 0)?,
                text: r.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(JobEvidence {
        captured: true,
        lines: count("output_lines"),
        errors,
        errors_dropped: count("output_errors_dropped"),
        tail,
        rates: rates(conn)?,
        markers,
    })
}

fn rates(conn: &Connection) -> rusqlite::Result<Vec<RateSeries>> {
    let mut st = conn.prepare("SELECT id, name, unit, dropped FROM rates ORDER BY id LIMIT 100")?;
    let heads = st
        .query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?, u64_at(r, 3)?))
        })?
        .collect::<rusqlite::Result<Vec<(i64, String, Option<String>, u64)>>>()?;
    let mut points = conn.prepare(
        "SELECT t_ms, value FROM rate_points WHERE rate = ?1 ORDER BY t_ms, rowid LIMIT ?2",
    )?;
    heads
        .into_iter()
        .map(|(id, name, unit, dropped)| {
            let mut points = points
                .query_map([id, MAX_RATE_POINTS as i64], |r| {
                    Ok((u64_at(r, 0)?, r.get(1)?))
                })?
                .collect::<rusqlite::Result<Vec<(u64, f64)>>>()?;
            // A crafted file's inf or 1e308 is no rate a recorder writes: left out, counted.
            let read = points.len();
            points.retain(|p| plausible(p.1));
            Ok(RateSeries {
                name,
                unit,
                dropped: dropped.saturating_add((read - points.len()) as u64),
                points,
            })
        })
        .collect()
}
