//! The filesystem root every read of /proc and /sys goes through.
//!
//! `/` is the live machine. Any other directory, or a `capture` archive (`.tar.zst`, extracted to a
//! private temporary directory), is a captured or simulated machine: there every symlink is resolved
//! inside the root (`..` and absolute targets are clamped at the root, as with openat2's
//! RESOLVE_IN_ROOT), only regular files are read, and each read is capped.

use rustix::fs::{Mode, OFlags};
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use thiserror::Error;

mod user_tree;
pub use user_tree::{Chunk, UserTree};

/// Largest file read from a root; longer files are an error, never silently truncated.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// Symlinks followed while resolving one path inside a captured root.
const MAX_LINK_HOPS: usize = 40;

/// A root that could not be opened.
#[derive(Debug, Error)]
pub enum RootError {
    /// The path does not exist or cannot be read.
    #[error("cannot open root {path}")]
    Open {
        /// The path given.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The path is neither a directory nor a capture archive.
    #[error("{path} is neither a directory nor a capture archive (.tar.zst or .tar); pass a directory made by `gpuledger simulate` or a file made by `gpuledger capture`")]
    NotARoot {
        /// The path given.
        path: PathBuf,
    },
    /// The archive is unreadable or hostile.
    #[error(transparent)]
    Archive(#[from] crate::archive::ArchiveError),
}

/// Where reads go: the live machine or a captured tree.
#[derive(Debug)]
pub struct Root {
    base: PathBuf,
    live: bool,
    label: String,
    /// Where `proc/` lives when it is not `<base>/proc` (the host's /proc mounted in a container).
    proc_dir: Option<PathBuf>,
    _extracted: Option<tempfile::TempDir>,
}

impl Root {
    /// The live machine.
    pub fn live() -> Root {
        Root {
            base: PathBuf::from("/"),
            live: true,
            label: "/".into(),
            proc_dir: None,
            _extracted: None,
        }
    }

    /// Opens a directory tree or a capture archive. `/` gives the live machine.
    pub fn open(path: &Path) -> Result<Root, RootError> {
        let meta = std::fs::metadata(path).map_err(|source| RootError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let label = path.display().to_string();
        if meta.is_dir() {
            let base = path.canonicalize().map_err(|source| RootError::Open {
                path: path.to_path_buf(),
                source,
            })?;
            if base == Path::new("/") {
                return Ok(Root::live());
            }
            return Ok(Root {
                base,
                live: false,
                label,
                proc_dir: None,
                _extracted: None,
            });
        }
        if !meta.is_file() {
            return Err(RootError::NotARoot {
                path: path.to_path_buf(),
            });
        }
        let dir = crate::archive::extract(path)?;
        let base = crate::archive::tree_base(dir.path());
        Ok(Root {
            base,
            live: false,
            label,
            proc_dir: None,
            _extracted: Some(dir),
        })
    }

    /// Reads `proc/…` from `dir` instead (`--proc`: the host's /proc mounted inside a container).
    pub fn with_proc(mut self, dir: &Path) -> Root {
        self.label = format!("{} (proc: {})", self.label, dir.display());
        self.proc_dir = Some(dir.to_path_buf());
        self
    }

    /// Whether this is the running machine (pids can be signalled, devices stat'ed).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// What the user passed, for messages and the JSON `root` field.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The real path of `rel` (e.g. `proc/meminfo`) with every symlink resolved inside the root;
    /// the last component is followed when `follow_last` is set.
    pub fn resolve(&self, rel: &Path, follow_last: bool) -> io::Result<PathBuf> {
        let rel = strip_root(rel);
        if let (Some(dir), Ok(rest)) = (&self.proc_dir, rel.strip_prefix("proc")) {
            return Ok(dir.join(rest));
        }
        if self.live {
            return Ok(self.base.join(rel));
        }
        let mut pending: VecDeque<OsString> = components(rel).collect();
        let mut done: Vec<OsString> = Vec::new();
        let mut hops = 0;
        while let Some(c) = pending.pop_front() {
            if c == ".." {
                done.pop();
                continue;
            }
            let mut here = self.base.clone();
            here.extend(&done);
            here.push(&c);
            let is_last = pending.is_empty();
            let link = match std::fs::symlink_metadata(&here) {
                Ok(m) if m.file_type().is_symlink() && (!is_last || follow_last) => {
                    std::fs::read_link(&here)?
                }
                _ => {
                    done.push(c);
                    continue;
                }
            };
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Err(io::Error::other(format!(
                    "too many levels of symbolic links under {}",
                    rel.display()
                )));
            }
            if link.is_absolute() {
                done.clear();
            }
            for (i, lc) in components(&link).enumerate() {
                pending.insert(i, lc);
            }
        }
        let mut out = self.base.clone();
        out.extend(done);
        Ok(out)
    }

    /// Reads a whole regular file, at most [`MAX_FILE_BYTES`].
    pub fn read(&self, rel: impl AsRef<Path>) -> io::Result<Vec<u8>> {
        self.read_capped(rel, MAX_FILE_BYTES)
    }

    /// Reads a whole regular file of at most `cap` bytes (for files known to be long, such as
    /// `/proc/PID/smaps`).
    pub fn read_capped(&self, rel: impl AsRef<Path>, cap: u64) -> io::Result<Vec<u8>> {
        let path = self.resolve(rel.as_ref(), true)?;
        // A captured root's path is fully resolved already; refusing a final symlink there is a
        // second guard. The live machine's own links (/etc/os-release) are followed.
        read_regular(&path, cap, !self.live)
    }

    /// Reads a file as text, replacing invalid UTF-8.
    pub fn read_string(&self, rel: impl AsRef<Path>) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&self.read(rel)?).into_owned())
    }

    /// The text of a symlink, not followed (parents are resolved inside the root).
    pub fn read_link(&self, rel: impl AsRef<Path>) -> io::Result<PathBuf> {
        let path = self.resolve(rel.as_ref(), false)?;
        std::fs::read_link(path)
    }

    /// Names in a directory.
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> io::Result<Vec<OsString>> {
        let path = self.resolve(rel.as_ref(), true)?;
        std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name()))
            .collect()
    }

    /// `st_size` of `rel` (one `stat`, following links inside the root).
    pub fn size_of(&self, rel: impl AsRef<Path>) -> io::Result<u64> {
        let path = self.resolve(rel.as_ref(), true)?;
        Ok(rustix::fs::stat(&path)?.st_size as u64)
    }

    /// Opens a directory for repeated `*at` calls (the per-process `fd/` directory).
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> io::Result<DirHandle> {
        let path = self.resolve(rel.as_ref(), true)?;
        let fd = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(DirHandle { fd, path })
    }
}

/// An open directory: entry names and `readlinkat` without re-walking the path.
#[derive(Debug)]
pub struct DirHandle {
    fd: OwnedFd,
    path: PathBuf,
}

impl DirHandle {
    /// Entry names, without `.` and `..`.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        list_capped(&self.fd, &self.path, usize::MAX)
    }

    /// The text of the symlink `name` in this directory.
    pub fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())?;
        Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
    }

    /// Device number (major, minor) of what `name` points to, following the link (live roots).
    pub fn char_device(&self, name: &OsStr) -> Option<(u32, u32)> {
        let st = rustix::fs::statat(&self.fd, name, rustix::fs::AtFlags::empty()).ok()?;
        let is_chr = rustix::fs::FileType::from_raw_mode(st.st_mode)
            == rustix::fs::FileType::CharacterDevice;
        is_chr.then(|| (rustix::fs::major(st.st_rdev), rustix::fs::minor(st.st_rdev)))
    }
}

fn strip_root(rel: &Path) -> &Path {
    rel.strip_prefix("/").unwrap_or(rel)
}

fn components(p: &Path) -> impl Iterator<Item = OsString> + '_ {
    p.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        _ => None,
    })
}

fn read_regular(path: &Path, cap: u64, nofollow: bool) -> io::Result<Vec<u8>> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    if nofollow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    read_capped(fd, path, cap)
}

/// The length of an open regular file; anything else is an error.
fn regular_len(fd: &OwnedFd, path: &Path) -> io::Result<u64> {
    let st = rustix::fs::fstat(fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(u64::try_from(st.st_size).unwrap_or(0))
}

/// Reads the open file `fd` (named `path` in errors) whole: only a regular file, at most `cap`
/// bytes (longer is an error, never silently truncated).
fn read_capped(fd: OwnedFd, path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    regular_len(&fd, path)?;
    let mut buf = Vec::new();
    std::fs::File::from(fd)
        .take(cap + 1)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {cap} bytes", path.display()),
        ));
    }
    Ok(buf)
}

/// The names in the open directory `fd` (named `path` in errors), without `.` and `..`; more
/// than `max` is an error.
fn list_capped(fd: &OwnedFd, path: &Path, max: usize) -> io::Result<Vec<OsString>> {
    let mut dir = rustix::fs::Dir::read_from(fd)?;
    let mut out = Vec::new();
    while let Some(entry) = dir.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if out.len() == max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} has more than {max} entries", path.display()),
            ));
        }
        out.push(OsStr::from_bytes(name).to_os_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/1/fd")).unwrap();
        std::fs::write(dir.path().join("proc/meminfo"), "MemTotal: 1 kB\n").unwrap();
        let root = Root::open(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn symlinks_cannot_escape() {
        let (dir, root) = tree();
        symlink("/etc/passwd", dir.path().join("proc/abs")).unwrap();
        symlink("../../../../../../etc/passwd", dir.path().join("proc/rel")).unwrap();
        symlink("../meminfo", dir.path().join("proc/1/mi")).unwrap();
        assert!(
            root.read("proc/abs").is_err(),
            "absolute link must stay inside"
        );
        assert!(
            root.read("proc/rel").is_err(),
            "dot-dot link must stay inside"
        );
        assert_eq!(root.read_string("proc/1/mi").unwrap(), "MemTotal: 1 kB\n");
        assert_eq!(
            root.read_link("proc/abs").unwrap(),
            PathBuf::from("/etc/passwd")
        );
    }

    #[test]
    fn link_loops_end_with_error() {
        let (dir, root) = tree();
        symlink("b", dir.path().join("proc/a")).unwrap();
        symlink("a", dir.path().join("proc/b")).unwrap();
        let err = root.read("proc/a").unwrap_err();
        assert!(err.to_string().contains("too many levels"), "{err}");
    }

    #[test]
    fn only_regular_files_are_read() {
        let (_dir, root) = tree();
        assert!(root.read("proc/1").is_err());
        let live = Root::live();
        assert!(
            live.read("dev/null").is_err(),
            "device files are never read"
        );
    }

    #[test]
    fn opening_slash_is_live() {
        assert!(Root::open(Path::new("/")).unwrap().is_live());
        let missing = Root::open(Path::new("/no/such/root")).unwrap_err();
        assert!(missing.to_string().contains("/no/such/root"));
    }
}
