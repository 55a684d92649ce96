//! Reads of host paths that a local user controls (the virtual environment beside a GPU
//! process's interpreter, a file a job may swap): the one rule for all of them.
//!
//! - the tree's top directory is opened through [`Root`] without following any symlink on the
//!   way (the path came from the kernel, e.g. `/proc/PID/exe`, so it has none unless the user
//!   swapped one in);
//! - below it, symlinks are followed only while they stay inside the tree and on its file system
//!   (openat2 `RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS`);
//! - every open is non-blocking, only regular files are read, each read is capped, each listing
//!   is capped in entries;
//! - every operation runs against the tree's time budget on a helper thread: a file system that
//!   never answers (a hung network mount) costs the caller the budget, never more. The helper
//!   that is stuck in the kernel is left behind; it holds only its own file descriptor.
//!
//! Where openat2 is missing (kernels before 5.6, some seccomp profiles) names are walked one
//! component at a time with `O_NOFOLLOW` instead: no symlink is followed at all, and mounts
//! inside the tree are crossed.
//!
//! ref: openat2(2) (`RESOLVE_*`), open(2) (`O_NONBLOCK` on FIFOs: the open returns at once).

use super::{list_capped, read_capped, regular_len, Root};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a walk below a user's tree resolves names.
const BELOW: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_XDEV)
    .union(ResolveFlags::NO_MAGICLINKS);

/// A directory that a local user controls, open for bounded reads below it.
#[derive(Debug)]
pub struct UserTree {
    fd: Arc<OwnedFd>,
    path: PathBuf,
    deadline: Instant,
}

impl Root {
    /// Opens the directory `rel` for reads under the rule of [`UserTree`]; the reads below it
    /// share `budget`. No component of `rel` may be a symlink.
    pub fn user_tree(&self, rel: impl AsRef<Path>, budget: Duration) -> io::Result<UserTree> {
        let path = self.resolve(rel.as_ref(), false)?;
        let deadline = Instant::now() + budget;
        let open = path.clone();
        let fd = within(deadline, &path, move || {
            open_resolved(
                rustix::fs::CWD,
                &open,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC,
                ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            )
        })?;
        Ok(UserTree {
            fd: Arc::new(fd),
            path,
            deadline,
        })
    }
}

impl UserTree {
    /// The tree's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the operations from now on a fresh `budget` (a tree read again and again, such as
    /// the phase-marker directory polled while a job runs).
    pub fn renew(&mut self, budget: Duration) {
        self.deadline = Instant::now() + budget;
    }

    /// Up to `max` bytes of the regular file `rel` from `offset` on, with the file's length.
    pub fn read_at(&self, rel: impl AsRef<Path>, offset: u64, max: u64) -> io::Result<Chunk> {
        let (fd, rel) = (self.fd.clone(), rel.as_ref().to_path_buf());
        let shown = self.path.join(&rel);
        let name = shown.clone();
        within(self.deadline, &shown, move || {
            let file = open_below(&fd, &rel)?;
            let len = regular_len(&file, &name)?;
            let mut file = std::fs::File::from(file);
            file.seek(SeekFrom::Start(offset.min(len)))?;
            let mut bytes = Vec::new();
            file.take(max).read_to_end(&mut bytes)?;
            Ok(Chunk { len, bytes })
        })
    }

    /// Reads the regular file `rel` below the tree, at most `cap` bytes (longer is an error).
    pub fn read(&self, rel: impl AsRef<Path>, cap: u64) -> io::Result<Vec<u8>> {
        let (fd, rel) = (self.fd.clone(), rel.as_ref().to_path_buf());
        let shown = self.path.join(&rel);
        let name = shown.clone();
        within(self.deadline, &shown, move || {
            let file = open_below(&fd, &rel)?;
            read_capped(file, &name, cap)
        })
    }

    /// Names in the directory `rel` below the tree (`""` for the tree itself), at most `max`
    /// (more is an error).
    pub fn list(&self, rel: impl AsRef<Path>, max: usize) -> io::Result<Vec<OsString>> {
        let (fd, rel) = (self.fd.clone(), rel.as_ref().to_path_buf());
        let shown = self.path.join(&rel);
        let name = shown.clone();
        within(self.deadline, &shown, move || {
            let at = if rel.as_os_str().is_empty() {
                Path::new(".")
            } else {
                rel.as_path()
            };
            let dir = open_resolved(
                fd.as_fd(),
                at,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC,
                BELOW,
            )?;
            list_capped(&dir, &name, max)
        })
    }
}

/// Part of a file read by [`UserTree::read_at`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The file's length when it was read.
    pub len: u64,
    /// The bytes read.
    pub bytes: Vec<u8>,
}

/// Opens `rel` below the tree's directory for reading, without blocking.
fn open_below(dir: &OwnedFd, rel: &Path) -> io::Result<OwnedFd> {
    open_resolved(
        dir.as_fd(),
        rel,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        BELOW,
    )
}

/// `openat2(start, path, flags, how)`; where the kernel has no openat2 (before 5.6) or a
/// seccomp filter refuses it, [`open_walking`], which follows no symlink at all.
fn open_resolved(
    start: BorrowedFd<'_>,
    path: &Path,
    flags: OFlags,
    how: ResolveFlags,
) -> io::Result<OwnedFd> {
    match rustix::fs::openat2(start, path, flags, Mode::empty(), how) {
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => open_walking(start, path, flags),
        done => Ok(done?),
    }
}

/// Opens `path` from `start` one component at a time with `O_NOFOLLOW`: a symlink anywhere, or
/// a `..`, is refused.
fn open_walking(start: BorrowedFd<'_>, path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    let names: Vec<&OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Ok(n)),
            Component::ParentDir => Some(Err(())),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect::<Result<_, ()>>()
        .map_err(|()| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} climbs with ..", path.display()),
            )
        })?;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut here: Option<OwnedFd> = if path.is_absolute() {
        Some(rustix::fs::open("/", dir_flags, Mode::empty())?)
    } else {
        None
    };
    let Some((last, parents)) = names.split_last() else {
        let at = here.as_ref().map_or(start, |fd| fd.as_fd());
        return Ok(rustix::fs::openat(at, ".", flags, Mode::empty())?);
    };
    for name in parents {
        let at = here.as_ref().map_or(start, |fd| fd.as_fd());
        here = Some(rustix::fs::openat(at, *name, dir_flags, Mode::empty())?);
    }
    let at = here.as_ref().map_or(start, |fd| fd.as_fd());
    Ok(rustix::fs::openat(
        at,
        *last,
        flags | OFlags::NOFOLLOW,
        Mode::empty(),
    )?)
}

/// Runs `op` on a helper thread and waits for it until `deadline`; once the deadline has passed
/// nothing more is started.
fn within<T: Send + 'static>(
    deadline: Instant,
    path: &Path,
    op: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let timed_out = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{} did not answer within its time budget", path.display()),
        )
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(timed_out());
    }
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("user-tree-read".into())
        .spawn(move || {
            let _ = tx.send(op());
        })?;
    rx.recv_timeout(left).unwrap_or_else(|_| Err(timed_out()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const BUDGET: Duration = Duration::from_secs(2);

    fn tree() -> (tempfile::TempDir, UserTree) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("lib/sub")).unwrap();
        std::fs::write(dir.path().join("lib/sub/v.py"), "x = 1\n").unwrap();
        let t = Root::live().user_tree(dir.path(), BUDGET).unwrap();
        (dir, t)
    }

    #[test]
    fn reads_and_lists_inside_the_tree() {
        let (dir, t) = tree();
        symlink("sub/v.py", dir.path().join("lib/inside")).unwrap();
        assert_eq!(t.read("lib/sub/v.py", 64).unwrap(), b"x = 1\n");
        assert_eq!(t.read("lib/inside", 64).unwrap(), b"x = 1\n");
        assert_eq!(t.list("lib", 8).unwrap().len(), 2);
        assert!(t.read("lib/sub/v.py", 3).is_err(), "longer than the cap");
        assert!(t.list("lib", 1).is_err(), "more entries than the cap");
    }

    #[test]
    fn links_out_of_the_tree_and_special_files_are_refused() {
        let (dir, t) = tree();
        symlink("/etc/hostname", dir.path().join("lib/abs")).unwrap();
        symlink(
            "../../../../../../../../etc/hostname",
            dir.path().join("lib/rel"),
        )
        .unwrap();
        symlink("/dev/zero", dir.path().join("lib/zero")).unwrap();
        symlink("/", dir.path().join("lib/top")).unwrap();
        for name in ["lib/abs", "lib/rel", "lib/zero", "lib/top/etc/hostname"] {
            assert!(t.read(name, 1 << 20).is_err(), "{name} must be refused");
        }
        assert!(t.list("lib/top", 8).is_err());
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let (dir, t) = tree();
        let fifo = dir.path().join("lib/fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let start = Instant::now();
        let err = t.read("lib/fifo", 64).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_symlinked_top_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        symlink("/etc", dir.path().join("venv")).unwrap();
        assert!(Root::live()
            .user_tree(dir.path().join("venv"), BUDGET)
            .is_err());
    }

    #[test]
    fn an_operation_that_never_answers_costs_the_budget() {
        let start = Instant::now();
        let deadline = start + Duration::from_millis(100);
        let err = within(deadline, Path::new("/hung"), || -> io::Result<()> {
            std::thread::sleep(Duration::from_secs(5));
            Ok(())
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_walk_without_openat2_follows_no_link_at_all() {
        let (dir, _t) = tree();
        symlink("sub/v.py", dir.path().join("lib/inside")).unwrap();
        let top = rustix::fs::open(
            dir.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = open_walking(top.as_fd(), Path::new("lib/sub/v.py"), flags).unwrap();
        assert_eq!(read_capped(fd, Path::new("v.py"), 64).unwrap(), b"x = 1\n");
        for bad in ["lib/inside", "lib/../lib/sub/v.py"] {
            assert!(
                open_walking(top.as_fd(), Path::new(bad), flags).is_err(),
                "{bad}"
            );
        }
        let abs = dir.path().join("lib/sub");
        assert!(open_walking(rustix::fs::CWD, &abs, flags | OFlags::DIRECTORY).is_ok());
        symlink(dir.path().join("lib"), dir.path().join("ln")).unwrap();
        let through = dir.path().join("ln/sub");
        assert!(open_walking(rustix::fs::CWD, &through, flags).is_err());
    }
}
