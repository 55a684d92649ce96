//! Opening a recording without ever writing to it or beside it.
//!
//! A closed recording is one file: it is opened read-only and immutable, so SQLite takes no locks
//! and never opens or creates a `-wal`, `-shm` or `-journal` beside it. A `-wal` beside it means
//! its recorder was killed or is still writing; SQLite would open that `-wal` and a `-shm`
//! read-write (following a hard link to any file), so instead the file and its `-wal` are copied
//! into a private directory and the copy is read. A `-wal` that is not a regular file, or files
//! over the copy limits, are not copied: the file alone is read immutable, as of its last
//! checkpoint (at most the last seconds are missing).
// ref: https://www.sqlite.org/uri.html (immutable=1)
// ref: https://www.sqlite.org/wal.html (the -wal and -shm files)

use super::read_check::MAX_VALUE_BYTES;
use rusqlite::limits::Limit;
use rusqlite::{Connection, OpenFlags};
use rustix::fs::{Mode, OFlags};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Largest `-wal` copied (a recorder checkpoints every few seconds; its `-wal` stays small).
const MAX_WAL_BYTES: u64 = 64 << 20;
/// Largest recording copied to read it with its `-wal`.
const MAX_COPY_BYTES: u64 = 4 << 30;

/// An open recording.
pub(super) struct Opened {
    /// The connection (declared first: it closes before the copy is removed).
    pub conn: Connection,
    /// A `-wal` lay beside the file.
    pub not_closed: bool,
    _copy: Option<tempfile::TempDir>,
}

/// Opens `path` for reading; the error is why it cannot be read as a database.
pub(super) fn open(path: &Path) -> Result<Opened, String> {
    let wal = beside(path, "-wal");
    let Ok(wal_meta) = wal.symlink_metadata() else {
        return Ok(Opened {
            conn: immutable(path).map_err(|e| e.to_string())?,
            not_closed: false,
            _copy: None,
        });
    };
    let copy = (wal_meta.is_file() && wal_meta.len() <= MAX_WAL_BYTES)
        .then(|| private_copy(path, &wal))
        .and_then(Result::ok);
    let conn = match &copy {
        Some(dir) => read_only(&dir.path().join("r.ledger")),
        None => immutable(path),
    }
    .map_err(|e| e.to_string())?;
    Ok(Opened {
        conn,
        not_closed: true,
        _copy: copy,
    })
}

/// The path of the file SQLite keeps beside `path` with this suffix.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// Copies the recording and its `-wal` into a new private directory (mode 0700).
fn private_copy(path: &Path, wal: &Path) -> io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("gpuledger-read-")
        .tempdir()?;
    copy_regular(
        path,
        &dir.path().join("r.ledger"),
        OFlags::empty(),
        MAX_COPY_BYTES,
    )?;
    copy_regular(
        wal,
        &dir.path().join("r.ledger-wal"),
        OFlags::NOFOLLOW,
        MAX_WAL_BYTES,
    )?;
    Ok(dir)
}

/// Copies `from` (a regular file, opened without blocking) to the new file `to`, at most `max`
/// bytes.
fn copy_regular(from: &Path, to: &Path, extra: OFlags, max: u64) -> io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | extra;
    let src = File::from(rustix::fs::open(from, flags, Mode::empty())?);
    let meta = src.metadata()?;
    if !meta.is_file() || meta.len() > max {
        return Err(io::Error::other("not a regular file within the copy limit"));
    }
    let mut dst = File::create_new(to)?;
    let copied = io::copy(&mut src.take(max + 1), &mut dst)?;
    match copied > max {
        true => Err(io::Error::other("grew past the copy limit")),
        false => Ok(()),
    }
}

/// Opens a closed recording immutable.
fn immutable(path: &Path) -> rusqlite::Result<Connection> {
    let mut uri = url_path(path);
    uri.push_str("?immutable=1");
    limited(Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?)
}

/// Opens our private copy read-only (SQLite replays the `-wal` and keeps a `-shm` beside it, in
/// our directory).
fn read_only(path: &Path) -> rusqlite::Result<Connection> {
    limited(Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?)
}

/// Strings and blobs longer than [`MAX_VALUE_BYTES`] become an error, not an allocation.
fn limited(conn: Connection) -> rusqlite::Result<Connection> {
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES);
    Ok(conn)
}

/// `file:` URI of a path, with the characters URIs reserve and non-ASCII bytes escaped (SQLite
/// decodes `%XX` back to the raw byte).
fn url_path(path: &Path) -> String {
    let mut out = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'?' | b'#' | b'%' | 0x80.. => out.push_str(&format!("%{b:02X}")),
            _ => out.push(char::from(*b)),
        }
    }
    out
}
