//! Writing the job's own evidence (`job_output`) into a recording.

use super::names::name_of;
use super::{Recorder, RecordingError};
use crate::job_output::{Batch, Counts, OutputLine, RateSpec};
use rusqlite::params;

fn ms(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

impl Recorder {
    /// Says the job's output is captured, and which rate series it feeds (ids follow the order).
    pub fn start_output(&mut self, rates: &[RateSpec]) -> Result<(), RecordingError> {
        self.set_meta("output_captured", "1")?;
        for (i, r) in rates.iter().enumerate() {
            self.conn
                .execute(
                    "INSERT INTO rates(id, name, unit, regex) VALUES (?1, ?2, ?3, ?4)",
                    params![i as i64 + 1, r.name, r.unit, r.regex.as_str()],
                )
                .map_err(self.err())?;
        }
        Ok(())
    }

    /// Appends what the job wrote since the last batch, in one transaction.
    pub fn add_output(&mut self, batch: &Batch) -> Result<(), RecordingError> {
        if batch.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let err = move |source| RecordingError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        for e in &batch.errors {
            tx.execute(
                "INSERT INTO output_lines(t_ms, stream, kind, text) VALUES (?1, ?2, ?3, ?4)",
                params![
                    ms(e.line.t_ms),
                    name_of(e.line.stream),
                    e.kind.as_str(),
                    e.line.text
                ],
            )
            .map_err(&err)?;
        }
        for (rate, t, v) in &batch.points {
            tx.execute(
                "INSERT INTO rate_points(rate, t_ms, value) VALUES (?1, ?2, ?3)",
                params![*rate as i64 + 1, ms(*t), v],
            )
            .map_err(&err)?;
        }
        for m in &batch.markers {
            tx.execute(
                "INSERT INTO markers(t_ms, text) VALUES (?1, ?2)",
                params![ms(m.t_ms), m.text],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    /// Writes the output's tail and what was seen but not kept.
    pub fn finish_output(
        &mut self,
        tail: &[OutputLine],
        counts: &Counts,
    ) -> Result<(), RecordingError> {
        self.set_meta("output_lines", &counts.lines.to_string())?;
        self.set_meta("output_errors_dropped", &counts.errors_dropped.to_string())?;
        self.set_meta("markers_dropped", &counts.markers_dropped.to_string())?;
        let path = self.path.clone();
        let err = move |source| RecordingError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        for (i, l) in tail.iter().enumerate() {
            tx.execute(
                "INSERT INTO output_tail(seq, t_ms, stream, text) VALUES (?1, ?2, ?3, ?4)",
                params![i as i64, ms(l.t_ms), name_of(l.stream), l.text],
            )
            .map_err(&err)?;
        }
        for (i, d) in counts.points_dropped.iter().enumerate() {
            tx.execute(
                "UPDATE rates SET dropped = ?2 WHERE id = ?1",
                params![i as i64 + 1, i64::try_from(*d).unwrap_or(i64::MAX)],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }
}
