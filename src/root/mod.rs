//! The filesystem root every read of /proc and /sys goes through.
//!
//! `/` is the live machine. Any other directory, or a `capture` archive (`.tar.zst`, extracted to a
//! private temporary directory), is a captured or simulated machine: there every symlink is resolved
//! inside the root (`..` and absolute targets are clamped at the root, as with openat2's
//! RESOLVE_IN_ROOT), only regular files are read, and each read is capped.

use rustix::fs::OFlags;
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use thiserror::Error;

mod in_root;
mod user_tree;
use in_root::TreeTop;
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
    /// A tree's top directory, open for `openat2(RESOLVE_IN_ROOT)`; `None` on the live machine.
    top: Option<TreeTop>,
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
            top: None,
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
                top: TreeTop::new(&base).ok(),
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
            top: TreeTop::new(&base).ok(),
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
                return Err(in_root::too_many_links(rel));
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
        let rel = rel.as_ref();
        let fd = self.open_in(rel, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC)?;
        read_capped(fd, &self.shown(rel), cap)
    }

    /// `rel` as messages name it: below the root's path.
    fn shown(&self, rel: &Path) -> PathBuf {
        self.base.join(strip_root(rel))
    }

    /// Reads a file as text, replacing invalid UTF-8.
    pub fn read_string(&self, rel: impl AsRef<Path>) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&self.read(rel)?).into_owned())
    }

    /// The text of a symlink, not followed (parents are resolved inside the root).
    pub fn read_link(&self, rel: impl AsRef<Path>) -> io::Result<PathBuf> {
        let link = self.read_link_in(rel.as_ref())?;
        Ok(PathBuf::from(OsString::from_vec(link)))
    }

    /// Names in a directory.
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> io::Result<Vec<OsString>> {
        self.open_dir(rel)?.names()
    }

    /// `st_size` of `rel` (one `stat` on the live machine; in a tree, links followed inside it).
    pub fn size_of(&self, rel: impl AsRef<Path>) -> io::Result<u64> {
        let rel = rel.as_ref();
        let st = if self.live && self.proc_dir.is_none() {
            rustix::fs::stat(self.base.join(strip_root(rel)))?
        } else {
            rustix::fs::fstat(self.open_in(rel, OFlags::PATH | OFlags::CLOEXEC)?)?
        };
        Ok(st.st_size as u64)
    }

    /// Opens a directory for repeated `*at` calls (the per-process `fd/` directory).
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> io::Result<DirHandle> {
        let rel = rel.as_ref();
        let fd = self.open_in(rel, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC)?;
        Ok(DirHandle {
            fd,
            path: self.shown(rel),
        })
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

/// Bytes first asked of a file whose `st_size` says nothing (procfs and sysfs files report 0 or
/// a page): one page holds a whole fdinfo, status or meminfo, so one `read` gets it.
const FIRST_READ: usize = 4096;

/// Reads the open file `fd` (named `path` in errors) whole: only a regular file, at most `cap`
/// bytes (longer is an error, never silently truncated). The buffer is sized to hold the file
/// with a byte to spare, so a file is one `read`; a short read is its end (regular files and
/// procfs's seq files fill the buffer while they have more), and only a filled buffer is read
/// on.
fn read_capped(fd: OwnedFd, path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let len = regular_len(&fd, path)?;
    let limit = usize::try_from(cap.saturating_add(1)).unwrap_or(usize::MAX);
    let first = match usize::try_from(len) {
        Ok(0) => FIRST_READ,
        Ok(n) => n.saturating_add(1),
        Err(_) => usize::MAX,
    }
    .min(limit);
    let mut buf: Vec<u8> = Vec::with_capacity(first);
    loop {
        let got = match rustix::io::read(&fd, rustix::buffer::spare_capacity(&mut buf)) {
            Err(rustix::io::Errno::INTR) => continue,
            got => got?,
        };
        if buf.len() as u64 > cap {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is larger than {cap} bytes", path.display()),
            ));
        }
        if got == 0 || buf.len() < buf.capacity() {
            return Ok(buf);
        }
        let more = buf.capacity().min(limit - buf.len());
        buf.reserve_exact(more);
    }
}

/// Bytes of directory entries asked of one `getdents64`: a /proc of a thousand pids, or a
/// table of a thousand fds, in one or two calls (each call into /proc re-finds its position
/// among the pids).
const DIR_BUF: usize = 32 << 10;

/// The names in the open directory `fd` (named `path` in errors), without `.` and `..`; more
/// than `max` is an error. Read from the start, with `getdents64` on `fd` itself.
fn list_capped(fd: &OwnedFd, path: &Path, max: usize) -> io::Result<Vec<OsString>> {
    rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(0))?;
    let mut buf: Vec<std::mem::MaybeUninit<u8>> = Vec::with_capacity(DIR_BUF);
    buf.resize(DIR_BUF, std::mem::MaybeUninit::uninit());
    let mut dir = rustix::fs::RawDir::new(fd, &mut buf);
    let mut out = Vec::new();
    while let Some(entry) = dir.next() {
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
