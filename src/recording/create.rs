//! Creating a recording file whole: schema and `meta` are written into a temporary file beside
//! the target, which is then renamed into place without overwriting anything. A recorder killed
//! at any point leaves either no file or a complete, empty recording (a stray `.gpuledger-*.tmp`
//! at worst), never a file without tables.

use super::{RecordingError, SCHEMA};
use rusqlite::{params, Connection};
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Creates `path` with the schema and `meta` rows, then opens it in WAL mode for appending.
pub(super) fn create(path: &Path, meta: &[(&str, String)]) -> Result<Connection, RecordingError> {
    let p = path.display().to_string();
    if path.exists() {
        return Err(RecordingError::Exists { path: p });
    }
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        if std::path::Path::new(&side).symlink_metadata().is_ok() {
            return Err(RecordingError::StaleSideFile {
                path: p,
                wal: std::path::Path::new(&side).display().to_string(),
            });
        }
    }
    let io = |source| RecordingError::Create {
        path: p.clone(),
        source,
    };
    let sql = |source| RecordingError::Sqlite {
        path: p.clone(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".gpuledger-")
        .suffix(".tmp")
        // What SQLite would have created the file with (the umask still applies).
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(io)?;
    {
        let mut conn = Connection::open(tmp.path()).map_err(sql)?;
        let tx = conn.transaction().map_err(sql)?;
        tx.execute_batch(SCHEMA).map_err(sql)?;
        for (k, v) in meta {
            tx.execute(
                "INSERT INTO meta(key, value) VALUES (?1, ?2)",
                params![k, v],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        conn.close().map_err(|(_, e)| sql(e))?;
    }
    tmp.persist_noclobber(path)
        .map_err(|e| match e.error.kind() {
            ErrorKind::AlreadyExists => RecordingError::Exists { path: p.clone() },
            _ => io(e.error),
        })?;
    let conn = Connection::open(path).map_err(sql)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sql)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql)?;
    Ok(conn)
}
