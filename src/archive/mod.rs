//! Capture archives: a capture tree packed as `.tar.zst` (or plain `.tar`).
//!
//! An archive is hostile input (a capture attached to a bug report by anyone). It is read twice:
//!
//! 1. **Validate**, writing nothing: every entry's name, type and size is checked against one
//!    [`budget::Budget`] for the whole archive (bytes as the tar reader will unpack them, entries,
//!    directories including the parents paths imply, depth, symlink text, time), and the bytes the
//!    tar reader may consume between two entries (headers, GNU long names, pax records) are
//!    bounded by a [`meter::Meter`] under it, so a header bomb costs at most [`MAX_HEADER_BYTES`]
//!    of reading and memory per entry. A refused archive leaves nothing on disk and fails in the
//!    time it takes to read its headers.
//! 2. **Unpack** into a new private directory through a directory handle ([`beneath`]): no path
//!    component is ever followed through a symlink, so no entry can be written outside, whatever
//!    the order of links and files. Symlinks are created last and only as data: [`crate::root::Root`]
//!    resolves them inside the root, and the root itself is never a symlink ([`tree_base`]). The
//!    budget is enforced again while unpacking, so a file that changes after validation is held
//!    to it too, and a tree cut short is removed (its depth is capped, so removal needs few fds).
//!
//! Unpacking rather than serving the archive from memory keeps one code path for capture
//! directories, simulations and archives (all are trees that `Root` reads the same way).

mod beneath;
mod budget;
mod meter;

use crate::clock::{Clock, SystemClock};
use beneath::Beneath;
use budget::{Ask, Budget};
pub use budget::{
    Limit, MAX_DEPTH, MAX_DIRS, MAX_ENTRIES, MAX_ENTRY_BYTES, MAX_LINK_BYTES, MAX_NAME_BYTES,
    MAX_TIME, MAX_TOTAL_BYTES,
};
use meter::{Meter, Metered};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;
use thiserror::Error;

/// Most bytes of headers, long names and pax records read for one entry.
pub const MAX_HEADER_BYTES: u64 = 64 << 10;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const BLOCK: u64 = 512;
/// Characters of an entry name quoted in an error.
const SHOWN_NAME: usize = 200;

/// A capture archive that cannot be used.
#[derive(Debug, Error)]
pub enum ArchiveError {
    /// Reading or unpacking failed.
    #[error("cannot read capture archive {path}")]
    Io {
        /// The archive.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// An entry would be written outside the tree, is not a plain file, directory or symlink, or
    /// exceeds a limit.
    #[error("capture archive {path} has a refused entry {entry:?}: {why}")]
    Refused {
        /// The archive.
        path: PathBuf,
        /// The entry's name as stored (or the last good entry, for header refusals).
        entry: String,
        /// Why it was refused.
        why: String,
    },
    /// The file is not a capture archive at all (its bytes are never quoted).
    #[error(
        "{path} is neither a capture directory nor a capture archive (.tar, .tar.gz or .tar.zst \
         as `gpuledger capture` writes); give the directory or archive `capture -o` made"
    )]
    NotAnArchive {
        /// The file.
        path: PathBuf,
    },
    /// A tar header after the first is not valid, or the archive ends inside an entry.
    #[error(
        "capture archive {path} is damaged after entry {after:?}: {why} (its bytes are not shown)"
    )]
    Damaged {
        /// The archive.
        path: PathBuf,
        /// The last entry read whole.
        after: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The archive exceeds its budget.
    #[error("capture archive {path} has a refused entry {entry:?}: {limit}")]
    OverBudget {
        /// The archive.
        path: PathBuf,
        /// The entry's name as stored.
        entry: String,
        /// The limit it exceeded.
        limit: Limit,
    },
}

/// Unpacks `path` into a new private temporary directory.
pub fn extract(path: &Path) -> Result<tempfile::TempDir, ArchiveError> {
    extract_in(path, &std::env::temp_dir())
}

/// Unpacks `path` into a new private directory created inside `parent`.
pub fn extract_in(path: &Path, parent: &Path) -> Result<tempfile::TempDir, ArchiveError> {
    extract_with(path, parent, &SystemClock)
}

/// [`extract_in`], with the time budget read from `clock`.
fn extract_with(
    path: &Path,
    parent: &Path,
    clock: &dyn Clock,
) -> Result<tempfile::TempDir, ArchiveError> {
    let io_err = |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    };
    let started = clock.now();
    walk(path, &mut Budget::new(clock, started), &mut |_, _| Ok(()))?;
    let dir = crate::private::dir_in(crate::private::Kind::Root, parent).map_err(io_err)?;
    let dest = Beneath::open(dir.path()).map_err(io_err)?;
    let mut links = Vec::new();
    walk(
        path,
        &mut Budget::new(clock, started),
        &mut |item, data| match item {
            Item::Dir(rel) => dest.create_dir_all(&rel),
            Item::File(rel) => io::copy(data, &mut dest.create_file(&rel)?).map(drop),
            Item::Symlink(rel, target) => {
                links.push((rel, target));
                Ok(())
            }
        },
    )?;
    for (rel, target) in links {
        dest.create_symlink(&rel, &target).map_err(|e| {
            let why = match e.kind() {
                io::ErrorKind::AlreadyExists => {
                    "a symlink with the name of another entry (entries are never written through links)".into()
                }
                _ => format!("cannot be created: {e}"),
            };
            refused(path, &rel.to_string_lossy(), why)
        })?;
    }
    Ok(dir)
}

/// One validated entry, with its safe relative path.
enum Item {
    Dir(PathBuf),
    File(PathBuf),
    Symlink(PathBuf, PathBuf),
}

impl Item {
    /// What the entry asks of the budget beyond its data.
    fn ask(&self) -> Ask<'_> {
        let (rel, is_dir, target) = match self {
            Item::Dir(rel) => (rel, true, None),
            Item::File(rel) => (rel, false, None),
            Item::Symlink(rel, target) => (rel, false, Some(target.as_path())),
        };
        Ask {
            rel,
            is_dir,
            target,
        }
    }
}

fn refused(path: &Path, entry: &str, why: impl Into<String>) -> ArchiveError {
    ArchiveError::Refused {
        path: path.to_path_buf(),
        entry: entry.to_string(),
        why: why.into(),
    }
}

/// Opens the archive, decompressing when its content (not its name) says zstd or gzip.
fn open_stream(path: &Path) -> io::Result<Box<dyn Read>> {
    let mut file = File::open(path)?;
    let mut magic = [0u8; 4];
    let n = file.read(&mut magic)?;
    let file = File::open(path)?;
    Ok(if n == 4 && magic == ZSTD_MAGIC {
        Box::new(zstd::Decoder::new(file)?)
    } else if n >= 2 && magic[..2] == GZIP_MAGIC {
        Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::new(file)))
    } else {
        Box::new(file)
    })
}

/// The (decompressed) stream of `path`, refused unless its first block is a tar header (ustar or
/// GNU magic) or the zero block of an empty archive, so that no other file's bytes reach the tar
/// reader, whose errors quote them.
fn tar_stream(path: &Path, mut stream: Box<dyn Read>) -> Result<Box<dyn Read>, ArchiveError> {
    let mut first = Vec::with_capacity(BLOCK as usize);
    (&mut stream)
        .take(BLOCK)
        .read_to_end(&mut first)
        .map_err(|source| ArchiveError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let header = first.len() == BLOCK as usize
        && (first[257..262] == *b"ustar" || first.iter().all(|b| *b == 0));
    if !header {
        return Err(ArchiveError::NotAnArchive {
            path: path.to_path_buf(),
        });
    }
    Ok(Box::new(io::Cursor::new(first).chain(stream)))
}

/// A tar reader's error past the first entry: parse errors (whose text quotes the header's
/// bytes) and a short archive become [`ArchiveError::Damaged`]; an I/O error stays one.
fn damaged(path: &Path, after: &str, e: io::Error) -> ArchiveError {
    let why = match e.kind() {
        io::ErrorKind::UnexpectedEof => "it ends inside an entry (truncated)",
        _ if e.raw_os_error().is_none() => "a header is not valid tar",
        _ => {
            return ArchiveError::Io {
                path: path.to_path_buf(),
                source: e,
            }
        }
    };
    ArchiveError::Damaged {
        path: path.to_path_buf(),
        after: after.to_string(),
        why,
    }
}

/// Reads every entry under the limits and the budget and hands each validated one (with its
/// data) to `visit`.
fn walk(
    path: &Path,
    budget: &mut Budget<'_>,
    visit: &mut dyn FnMut(Item, &mut dyn Read) -> io::Result<()>,
) -> Result<(), ArchiveError> {
    let io_err = |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    };
    let over = |entry: &str, limit| ArchiveError::OverBudget {
        path: path.to_path_buf(),
        entry: entry.to_string(),
        limit,
    };
    let meter = Rc::new(Meter::default());
    let stream = tar_stream(path, open_stream(path).map_err(io_err)?)?;
    let stream = Metered::new(stream, meter.clone());
    let mut archive = tar::Archive::new(stream);
    let mut last = String::from("(start of archive)");
    meter.allow(MAX_HEADER_BYTES);
    for entry in archive.entries().map_err(io_err)? {
        let mut entry = entry.map_err(|e| match meter.exhausted() {
            true => refused(
                path,
                &last,
                "the next entry's headers (long name or pax records) exceed 64 KiB",
            ),
            false => damaged(path, &last, e),
        })?;
        let raw_name = entry.path_bytes();
        let name = shown(&raw_name);
        budget.entry(raw_name.len()).map_err(|l| over(&name, l))?;
        // What the tar reader will hand out: a pax `size` record overrides the header's.
        let size = entry.size();
        budget.data(size).map_err(|l| over(&name, l))?;
        meter.allow(size.div_ceil(BLOCK) * BLOCK + MAX_HEADER_BYTES);
        if let Some(item) = classify(path, &name, &entry)? {
            budget.admit(&item.ask()).map_err(|l| over(&name, l))?;
            visit(item, &mut entry)
                .map_err(|e| refused(path, &name, format!("cannot be unpacked: {e}")))?;
        }
        last = name;
    }
    Ok(())
}

/// An entry's name as error messages quote it: at most [`SHOWN_NAME`] characters, then its
/// length (a hostile name can be 64 KiB).
fn shown(raw: &[u8]) -> String {
    let name = String::from_utf8_lossy(raw);
    match name.char_indices().nth(SHOWN_NAME) {
        Some((cut, _)) => format!("{}… ({} bytes)", &name[..cut], raw.len()),
        None => name.into_owned(),
    }
}

/// The entry as an [`Item`], `None` for entries that carry no file (the archive's own `.`, pax
/// global headers), or a refusal.
fn classify(
    path: &Path,
    name: &str,
    entry: &tar::Entry<'_, impl Read>,
) -> Result<Option<Item>, ArchiveError> {
    use tar::EntryType as T;
    let kind = entry.header().entry_type();
    if matches!(kind, T::XGlobalHeader | T::XHeader) {
        return Ok(None);
    }
    let rel = entry
        .path()
        .map_err(|e| refused(path, name, format!("unusable name: {e}")))?;
    let Some(rel) =
        safe_relative(&rel).ok_or_else(|| refused(path, name, "absolute or '..' path"))?
    else {
        return Ok(None);
    };
    Ok(Some(match kind {
        T::Directory => Item::Dir(rel),
        T::Regular | T::Continuous => Item::File(rel),
        T::Symlink => {
            let target = entry
                .link_name()
                .ok()
                .flatten()
                .ok_or_else(|| refused(path, name, "symlink without a usable target"))?;
            Item::Symlink(rel, target.into_owned())
        }
        _ => {
            return Err(refused(
                path,
                name,
                "not a regular file, directory or symlink (device, FIFO or hard link)",
            ))
        }
    }))
}

/// `Some(None)` for the archive's own `.` entry, `Some(path)` for a safe relative path, `None` if unsafe.
fn safe_relative(p: &Path) -> Option<Option<PathBuf>> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some((!out.as_os_str().is_empty()).then_some(out))
}

/// The directory holding `proc/`: the unpacked root itself, or its single top-level directory.
/// Only real directories count: a top-level symlink (`x -> /`) is never taken as the root.
pub fn tree_base(dir: &Path) -> PathBuf {
    let is_real_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if is_real_dir(&dir.join("proc")) {
        return dir.to_path_buf();
    }
    let mut subdirs = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_real_dir(p) && is_real_dir(&p.join("proc")));
    match (subdirs.next(), subdirs.next()) {
        (Some(only), None) => only,
        _ => dir.to_path_buf(),
    }
}

/// Packs the tree at `src` into a zstd-compressed tar at `out` (written atomically).
pub fn pack(src: &Path, out: &Path) -> io::Result<()> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let tmp = tempfile::NamedTempFile::new_in(parent.unwrap_or(Path::new(".")))?;
    {
        let enc = zstd::Encoder::new(tmp.as_file(), 9)?.auto_finish();
        let mut builder = tar::Builder::new(enc);
        builder.follow_symlinks(false);
        builder.append_dir_all(".", src)?;
        builder.into_inner()?;
    }
    tmp.persist(out).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
