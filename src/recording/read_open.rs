//! Opening a recording without ever writing to it or beside it.
//!
//! A closed recording is one file: it is opened read-only and immutable, so SQLite takes no locks
//! and never opens or creates a `-wal`, `-shm` or `-journal` beside it. A `-wal` beside it means
//! its recorder was killed or is still writing; SQLite would open that `-wal` and a `-shm`
//! read-write (following a hard link to any file), so instead the file and its `-wal` are copied
//! into a private directory (0700, [`crate::private`]) and the copy is read. A `-wal` that is not
//! a regular file, or files over the copy limits, are not copied: the file alone is read
//! immutable, as of its last checkpoint (at most the last seconds are missing). Nothing is copied
//! before the file is known to be an SQLite database opened without following a link, and the
//! copy is off the disk before the first row is read.
// ref: https://www.sqlite.org/uri.html (immutable=1)
// ref: https://www.sqlite.org/wal.html (the -wal and -shm files)

use super::read_check::MAX_VALUE_BYTES;
use rusqlite::limits::Limit;
use rusqlite::{Connection, OpenFlags};
use rustix::fs::{Mode, OFlags};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Largest `-wal` copied (a recorder checkpoints every few seconds; its `-wal` stays small).
const MAX_WAL_BYTES: u64 = 64 << 20;
/// Largest recording copied to read it with its `-wal`.
const MAX_COPY_BYTES: u64 = 4 << 30;

/// An open recording.
pub(super) struct Opened {
    /// The connection (to the file itself, or to a private copy already removed from disk).
    pub conn: Connection,
    /// A `-wal` lay beside the file.
    pub not_closed: bool,
}

/// Why a file cannot be opened as a recording.
#[derive(Debug, thiserror::Error)]
pub(super) enum OpenError {
    /// The file (or its `-wal`) cannot be opened or read: permission denied, gone.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The file is readable but no SQLite database.
    #[error("{0}")]
    NotSqlite(String),
    /// The file is an SQLite database cut short.
    #[error("truncated: {0}")]
    Truncated(String),
    /// SQLite refused it.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// The size of an SQLite file header.
const HEADER_BYTES: usize = 100;

/// Opens `path` for reading. The checks and SQLite read the one inode opened here (through
/// `/proc/self/fd`), so the file cannot be swapped between the check and the read.
pub(super) fn open(path: &Path) -> Result<Opened, OpenError> {
    let wal = beside(path, "-wal");
    let Ok(wal_meta) = wal.symlink_metadata() else {
        let file = open_checked(path, OFlags::empty(), MAX_COPY_BYTES)?;
        return Ok(Opened {
            conn: immutable(&fd_path(&file))?,
            not_closed: false,
        });
    };
    let nofollow = OFlags::NOFOLLOW;
    let copyable = wal_meta.is_file() && (1..=MAX_WAL_BYTES).contains(&wal_meta.len());
    let file = open_checked(path, nofollow, MAX_COPY_BYTES).map_err(|e| match e {
        OpenError::Io(io) if io.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            OpenError::NotSqlite(
                "a symbolic link with a -wal beside it (its recorder was killed or still \
                 writes); read the file it points to"
                    .into(),
            )
        }
        e => e,
    })?;
    let conn = match copyable.then(|| read_via_copy(file.try_clone()?, &wal)) {
        Some(Ok(conn)) => conn,
        _ => immutable(&fd_path(&file))?,
    };
    Ok(Opened {
        conn,
        not_closed: true,
    })
}

/// Opens `path` read-only without blocking, with `extra` flags, and checks that it is a
/// regular file within `max` bytes that starts with a whole SQLite header.
fn open_checked(path: &Path, extra: OFlags, max: u64) -> Result<File, OpenError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | extra;
    let file = File::from(rustix::fs::open(path, flags, Mode::empty()).map_err(io::Error::from)?);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(OpenError::NotSqlite("not a regular file".into()));
    }
    if meta.len() > max {
        return Err(OpenError::NotSqlite(format!(
            "{} bytes, more than a recording may hold",
            meta.len()
        )));
    }
    let mut head = [0u8; HEADER_BYTES];
    let got = read_up_to(&file, &mut head)?;
    header_problem(&head[..got], meta.len()).map_or(Ok(file), Err)
}

/// What is wrong with a file whose first bytes are `head` and whose size is `len`, if anything.
fn header_problem(head: &[u8], len: u64) -> Option<OpenError> {
    let magic = &SQLITE_MAGIC[..head.len().min(SQLITE_MAGIC.len())];
    if len == 0 || !head.starts_with(magic) {
        let why = match len {
            0 => "the file is empty",
            _ => "not an SQLite database: its first bytes are not \"SQLite format 3\"",
        };
        return Some(OpenError::NotSqlite(why.into()));
    }
    if head.len() < HEADER_BYTES {
        return Some(OpenError::Truncated(format!(
            "{len} bytes, shorter than an SQLite header"
        )));
    }
    // The page size: bytes 16–17, big-endian; 1 means 65536 (ref: sqlite.org/fileformat.html).
    let page = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65_536,
        p => u64::from(p),
    };
    (page < 512 || !page.is_power_of_two() || len % page != 0).then(|| {
        OpenError::Truncated(format!(
            "{len} bytes is not a whole number of its {page}-byte pages"
        ))
    })
}

/// Reads into `buf` until it is full or the file ends; returns the bytes read.
fn read_up_to(mut file: &File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// The path that opens the file behind `file` again.
fn fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// The path of the file SQLite keeps beside `path` with this suffix.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// Reads a recording with its `-wal` through a private copy: both are copied from the fds
/// checked here into a new 0700 directory, SQLite folds the `-wal` into the copy, the copy is
/// opened immutable and the directory is removed at once, so nothing stays on disk even if
/// gpuledger is killed while it reads (a copy left by a kill during the copy itself is removed
/// by the next run, [`crate::private`]).
fn read_via_copy(db: File, wal: &Path) -> Result<Connection, OpenError> {
    let wal = open_wal(wal)?;
    let dir = crate::private::dir(crate::private::Kind::Read)?;
    let copy = dir.path().join("r.ledger");
    copy_from(db, &copy, MAX_COPY_BYTES)?;
    copy_from(wal, &dir.path().join("r.ledger-wal"), MAX_WAL_BYTES)?;
    {
        let conn = Connection::open_with_flags(
            &copy,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        conn.pragma_update(None, "journal_mode", "DELETE")?;
    }
    let conn = immutable(&copy)?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
    dir.close()?;
    Ok(conn)
}

/// Opens a `-wal` (never through a link) and checks its header magic.
fn open_wal(wal: &Path) -> Result<File, OpenError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let file = File::from(rustix::fs::open(wal, flags, Mode::empty()).map_err(io::Error::from)?);
    let mut magic = [0u8; 4];
    let got = read_up_to(&file, &mut magic)?;
    // ref: sqlite.org/fileformat.html, "WAL File Format": 0x377f0682 or 0x377f0683.
    match (got, u32::from_be_bytes(magic)) {
        (4, 0x377f_0682 | 0x377f_0683) if file.metadata()?.is_file() => Ok(file),
        _ => Err(OpenError::NotSqlite(
            "its -wal is no SQLite write-ahead log".into(),
        )),
    }
}

/// Copies the open file `src` from its start into the new private file `to`, at most `max`
/// bytes.
fn copy_from(src: File, to: &Path, max: u64) -> io::Result<()> {
    let mut src = src;
    src.seek(SeekFrom::Start(0))?;
    let mut dst = crate::private::create_file(to)?;
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
