//! Capture archives: a capture tree packed as `.tar.zst` (or plain `.tar`).
//!
//! Reading treats the archive as hostile: absolute or `..` paths, device files, FIFOs and hard
//! links are refused with an error naming the entry; files and the whole tree are size-capped.
//! Symlinks are unpacked as they are and later resolved inside the root by [`crate::root::Root`].

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use thiserror::Error;

/// Largest single file accepted from an archive.
pub const MAX_ENTRY_BYTES: u64 = 16 << 20;
/// Largest unpacked tree accepted from an archive.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Most entries accepted from an archive.
pub const MAX_ENTRIES: usize = 200_000;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// A capture archive that cannot be used.
#[derive(Debug, Error)]
pub enum ArchiveError {
    /// Reading or unpacking failed.
    #[error("cannot read capture archive {path}: {source}")]
    Io {
        /// The archive.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// An entry would be written outside the tree or is not a plain file, directory or symlink.
    #[error("capture archive {path} has a refused entry {entry:?}: {why}")]
    Refused {
        /// The archive.
        path: PathBuf,
        /// The entry's name as stored.
        entry: String,
        /// Why it was refused.
        why: &'static str,
    },
}

/// Unpacks `path` into a new private temporary directory.
pub fn extract(path: &Path) -> Result<tempfile::TempDir, ArchiveError> {
    let io_err = |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let mut magic = [0u8; 4];
    let n = file.read(&mut magic).map_err(io_err)?;
    drop(file);
    let file = File::open(path).map_err(io_err)?;
    let reader: Box<dyn Read> = if n == 4 && magic == ZSTD_MAGIC {
        Box::new(zstd::Decoder::new(file).map_err(io_err)?)
    } else {
        Box::new(file)
    };
    let dir = tempfile::Builder::new()
        .prefix("gpuledger-root-")
        .tempdir()
        .map_err(io_err)?;
    unpack(path, reader, dir.path())?;
    Ok(dir)
}

fn unpack(path: &Path, reader: impl Read, dest: &Path) -> Result<(), ArchiveError> {
    let io_err = |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut archive = tar::Archive::new(reader);
    let mut total = 0u64;
    for (count, entry) in archive.entries().map_err(io_err)?.enumerate() {
        let mut entry = entry.map_err(io_err)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let refuse = |why| ArchiveError::Refused {
            path: path.to_path_buf(),
            entry: name.clone(),
            why,
        };
        if count >= MAX_ENTRIES {
            return Err(refuse("the archive has too many entries"));
        }
        let rel = entry.path().map_err(io_err)?.into_owned();
        let clean = safe_relative(&rel).ok_or_else(|| refuse("absolute or '..' path"))?;
        let Some(clean) = clean else { continue };
        let target = dest.join(&clean);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(io_err)?;
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io_err)?;
        }
        if kind.is_symlink() {
            let link = entry
                .link_name()
                .map_err(io_err)?
                .ok_or_else(|| refuse("symlink without a target"))?;
            std::os::unix::fs::symlink(&link, &target).map_err(io_err)?;
        } else if kind.is_file() {
            let size = entry.header().size().map_err(io_err)?;
            if size > MAX_ENTRY_BYTES {
                return Err(refuse("file larger than 16 MiB"));
            }
            total += size;
            if total > MAX_TOTAL_BYTES {
                return Err(refuse("unpacked tree would exceed 1 GiB"));
            }
            let mut out = File::create(&target).map_err(io_err)?;
            io::copy(&mut (&mut entry).take(MAX_ENTRY_BYTES), &mut out).map_err(io_err)?;
            out.flush().map_err(io_err)?;
        } else {
            return Err(refuse(
                "not a regular file, directory or symlink (device, FIFO or hard link)",
            ));
        }
    }
    Ok(())
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
pub fn tree_base(dir: &Path) -> PathBuf {
    if dir.join("proc").is_dir() {
        return dir.to_path_buf();
    }
    let mut subdirs = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("proc").is_dir());
    match (subdirs.next(), subdirs.next()) {
        (Some(only), None) => only.path(),
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
mod tests {
    use super::*;

    fn archive_with(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> tempfile::NamedTempFile {
        let mut b = tar::Builder::new(Vec::new());
        build(&mut b);
        let data = b.into_inner().unwrap();
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), data).unwrap();
        f
    }

    fn header(kind: tar::EntryType, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o644);
        h
    }

    fn raw_name(h: &mut tar::Header, name: &str) {
        let gnu = h.as_gnu_mut().unwrap();
        gnu.name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_cksum();
    }

    #[test]
    fn refuses_dot_dot_and_absolute_paths() {
        for bad in ["../evil", "/etc/evil", "proc/../../evil"] {
            let f = archive_with(|b| {
                let mut h = header(tar::EntryType::Regular, 1);
                raw_name(&mut h, bad);
                b.append(&h, &b"x"[..]).unwrap();
            });
            let err = extract(f.path()).unwrap_err().to_string();
            assert!(err.contains("absolute or '..' path"), "{bad}: {err}");
        }
    }

    #[test]
    fn refuses_device_files() {
        let f = archive_with(|b| {
            let mut h = header(tar::EntryType::Char, 0);
            raw_name(&mut h, "proc/kcore");
            b.append(&h, &b""[..]).unwrap();
        });
        let err = extract(f.path()).unwrap_err().to_string();
        assert!(
            err.contains("proc/kcore") && err.contains("device"),
            "{err}"
        );
    }

    #[test]
    fn refuses_huge_files() {
        let f = archive_with(|b| {
            let mut h = header(tar::EntryType::Regular, MAX_ENTRY_BYTES + 1);
            raw_name(&mut h, "proc/meminfo");
            b.append(&h, io::repeat(0).take(MAX_ENTRY_BYTES + 1))
                .unwrap();
        });
        let err = extract(f.path()).unwrap_err().to_string();
        assert!(err.contains("larger than 16 MiB"), "{err}");
    }

    #[test]
    fn pack_and_extract_round_trip_keeps_symlinks() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("proc/7/fd")).unwrap();
        std::fs::write(src.path().join("proc/meminfo"), "MemTotal: 4 kB\n").unwrap();
        std::os::unix::fs::symlink("/dev/dri/renderD128", src.path().join("proc/7/fd/3")).unwrap();
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("snap.tar.zst");
        pack(src.path(), &file).unwrap();
        let dir = extract(&file).unwrap();
        let base = tree_base(dir.path());
        assert_eq!(
            std::fs::read_to_string(base.join("proc/meminfo")).unwrap(),
            "MemTotal: 4 kB\n"
        );
        assert_eq!(
            std::fs::read_link(base.join("proc/7/fd/3")).unwrap(),
            PathBuf::from("/dev/dri/renderD128")
        );
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), [0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]).unwrap();
        let err = extract(f.path()).unwrap_err().to_string();
        assert!(err.contains("cannot read capture archive"), "{err}");
    }
}
