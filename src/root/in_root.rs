//! Opening a path of a captured or simulated tree with every symlink resolved inside the tree:
//! one `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)` from the tree's directory, where the
//! kernel has it; otherwise the component walk of [`Root::resolve`] (an `lstat` per component)
//! and an `O_NOFOLLOW` open of the path it gives. Both clamp `..` and absolute link targets at
//! the tree's top, so they open the same file.
//!
//! ref: openat2(2) (`RESOLVE_IN_ROOT`: "as though the calling process had used chroot(2)";
//! `EAGAIN` when a concurrent rename makes the kernel refuse to retry; `ENOSYS` before 5.6;
//! `EPERM`/`EINVAL` from seccomp filters and unknown flags).

use super::Root;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// How a tree's paths are resolved by openat2.
const IN_ROOT: ResolveFlags = ResolveFlags::IN_ROOT.union(ResolveFlags::NO_MAGICLINKS);

/// The open top directory of a tree, and whether openat2 is still worth trying on it.
#[derive(Debug)]
pub(super) struct TreeTop {
    fd: OwnedFd,
    openat2: AtomicBool,
}

impl TreeTop {
    /// Opens `base` (already canonical) as a tree's top.
    pub(super) fn new(base: &Path) -> io::Result<TreeTop> {
        let fd = rustix::fs::open(
            base,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(TreeTop {
            fd,
            openat2: AtomicBool::new(true),
        })
    }

    /// `openat2` of `rel` below the top; `None` where the kernel refused the call itself (then
    /// the caller walks). A refusal that will repeat (no openat2, a seccomp filter) is
    /// remembered, so later opens walk at once.
    pub(super) fn open(&self, rel: &Path, flags: OFlags) -> Option<io::Result<OwnedFd>> {
        if !self.openat2.load(Ordering::Relaxed) {
            return None;
        }
        let at = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        match rustix::fs::openat2(&self.fd, at, flags, Mode::empty(), IN_ROOT) {
            Ok(fd) => Some(Ok(fd)),
            Err(Errno::NOSYS | Errno::PERM) => {
                self.openat2.store(false, Ordering::Relaxed);
                None
            }
            Err(Errno::INVAL | Errno::AGAIN) => None,
            Err(Errno::LOOP) => Some(Err(too_many_links(rel))),
            Err(e) => Some(Err(e.into())),
        }
    }
}

/// The error for a link chain that does not end, the same on both paths.
pub(super) fn too_many_links(rel: &Path) -> io::Error {
    io::Error::other(format!(
        "too many levels of symbolic links under {}",
        rel.display()
    ))
}

impl Root {
    /// Opens `rel` with `flags`, every symlink resolved inside the root (a captured tree), or as
    /// the path says (the live machine, `--proc`).
    pub(super) fn open_in(&self, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let rel = super::strip_root(rel);
        if let Some(top) = self.tree_top(rel) {
            if let Some(done) = top.open(rel, flags) {
                return done;
            }
        }
        self.open_walked(rel, flags)
    }

    /// The open of [`Root::open_in`] by the component walk: the path resolved by
    /// [`Root::resolve`], then opened without following a link.
    pub(super) fn open_walked(&self, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let path = self.resolve(rel, true)?;
        let nofollow = if self.is_tree_path(rel) {
            OFlags::NOFOLLOW
        } else {
            OFlags::empty()
        };
        Ok(rustix::fs::open(&path, flags | nofollow, Mode::empty())?)
    }

    /// The text of the symlink `rel`, its parents resolved inside the root, one `openat2` of
    /// the parent and one `readlinkat` where the kernel allows.
    pub(super) fn read_link_in(&self, rel: &Path) -> io::Result<Vec<u8>> {
        let rel = super::strip_root(rel);
        let split = match (rel.parent(), rel.components().next_back()) {
            (Some(parent), Some(Component::Normal(name))) => Some((parent, name)),
            _ => None,
        };
        if let (Some(top), Some((parent, name))) = (self.tree_top(rel), split) {
            let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            if let Some(dir) = top.open(parent, dir_flags) {
                let link = rustix::fs::readlinkat(&dir?, name, Vec::new())?;
                return Ok(link.into_bytes());
            }
        }
        let path = self.resolve(rel, false)?;
        let link = rustix::fs::readlink(&path, Vec::new())?;
        Ok(link.into_bytes())
    }

    /// The open top of the tree when `rel` is read from one.
    fn tree_top(&self, rel: &Path) -> Option<&TreeTop> {
        self.top.as_ref().filter(|_| self.is_tree_path(rel))
    }

    /// Whether `rel` is resolved inside the tree (not live, not under a `--proc` directory).
    fn is_tree_path(&self, rel: &Path) -> bool {
        let under_proc = self.proc_dir.is_some() && rel.starts_with("proc");
        !self.live && !under_proc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A tree whose links try every way out, beside a secret file outside it.
    fn hostile() -> (tempfile::TempDir, Root) {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "outside").unwrap();
        let top = outside.path().join("tree");
        let t = |p: &str| top.join(p);
        std::fs::create_dir_all(t("proc/1/fd")).unwrap();
        std::fs::write(t("secret"), "inside").unwrap();
        symlink(&secret, t("proc/abs")).unwrap();
        symlink("../../../../../../secret", t("proc/up")).unwrap();
        symlink(outside.path(), t("proc/dir_out")).unwrap();
        symlink("/", t("proc/slash")).unwrap();
        symlink("1", t("proc/self_dir")).unwrap();
        symlink("b", t("proc/a")).unwrap();
        symlink("a", t("proc/b")).unwrap();
        symlink("/dev/zero", t("proc/zero")).unwrap();
        symlink("/proc/self/root", t("proc/magic")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            t("proc/fifo"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let root = Root::open(&top).unwrap();
        (outside, root)
    }

    /// What one open gives: the file's (device, inode), or the error's kind and text.
    fn outcome(r: io::Result<OwnedFd>) -> Result<(u64, u64), (io::ErrorKind, String)> {
        r.map(|fd| {
            let st = rustix::fs::fstat(&fd).unwrap();
            (st.st_dev, st.st_ino)
        })
        .map_err(|e| (e.kind(), e.to_string()))
    }

    #[test]
    fn openat2_and_the_walk_open_the_same_files_of_a_hostile_tree() {
        let (_outside, root) = hostile();
        assert!(root.top.is_some());
        let paths = [
            "secret",
            "proc/abs",
            "proc/up",
            "proc/dir_out/secret",
            "proc/slash/secret",
            "proc/slash/proc/up",
            "proc/self_dir/fd",
            "proc/../../secret",
            "proc/a",
            "proc/zero",
            "proc/magic",
            "proc/fifo",
            "proc/missing",
            "",
        ];
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        for p in paths {
            let fast = outcome(root.open_in(Path::new(p), flags));
            let walked = outcome(root.open_walked(Path::new(p), flags));
            assert_eq!(fast, walked, "{p}");
            if let Ok(bytes) = root.read(p) {
                assert_ne!(bytes, b"outside", "{p} escaped the tree");
            }
        }
        assert_eq!(root.read("proc/up").unwrap(), b"inside");
        assert_eq!(root.read("proc/slash/secret").unwrap(), b"inside");
        for p in ["proc/abs", "proc/dir_out/secret", "proc/zero", "proc/magic"] {
            assert!(root.read(p).is_err(), "{p} must not be read");
        }
        assert_eq!(
            root.read_link("proc/self_dir").unwrap(),
            Path::new("1"),
            "the link itself, not its target"
        );
    }

    #[test]
    fn a_refused_openat2_is_remembered_and_walked() {
        let (_outside, root) = hostile();
        let top = root.top.as_ref().unwrap();
        top.openat2.store(false, Ordering::Relaxed);
        assert!(top.open(Path::new("secret"), OFlags::RDONLY).is_none());
        assert_eq!(root.read("proc/up").unwrap(), b"inside");
        let err = root.read("proc/a").unwrap_err();
        assert!(err.to_string().contains("too many levels"), "{err}");
    }
}
