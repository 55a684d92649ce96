//! Creating files under a directory handle without ever following a symlink.
//!
//! Every path is walked one component at a time with `openat(O_NOFOLLOW | O_DIRECTORY)` from the
//! extraction directory's own handle, and files are created with `O_CREAT | O_EXCL | O_NOFOLLOW`.
//! Whatever an archive holds (a symlink `esc -> /tmp` followed by `esc/pwned`, `x -> /`), no
//! write can pass through a link: the kernel refuses the open instead. Path checks (`..`,
//! absolute names) are done too, but safety does not rest on them.

use rustix::fs::{Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

/// An open directory that files are created beneath.
#[derive(Debug)]
pub(super) struct Beneath {
    root: OwnedFd,
}

impl Beneath {
    /// Opens `dir` (a directory gpuledger created itself).
    pub(super) fn open(dir: &Path) -> io::Result<Beneath> {
        let root = rustix::fs::open(dir, dir_flags(), Mode::empty())?;
        Ok(Beneath { root })
    }

    /// Creates the directory `rel` and its parents.
    pub(super) fn create_dir_all(&self, rel: &Path) -> io::Result<()> {
        self.walk(rel.components()).map(drop)
    }

    /// Creates the new regular file `rel` (an existing name, even a symlink, is an error).
    pub(super) fn create_file(&self, rel: &Path) -> io::Result<File> {
        let (parent, name) = self.parent_of(rel)?;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(&parent, name, flags | OFlags::CLOEXEC, Mode::from(0o644))?;
        Ok(File::from(fd))
    }

    /// Creates the symlink `rel` with the text `target` (never followed here).
    pub(super) fn create_symlink(&self, rel: &Path, target: &Path) -> io::Result<()> {
        let (parent, name) = self.parent_of(rel)?;
        Ok(rustix::fs::symlinkat(target, &parent, name)?)
    }

    fn parent_of<'a>(&self, rel: &'a Path) -> io::Result<(OwnedFd, &'a OsStr)> {
        let name = rel
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty entry name"))?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        Ok((self.walk(parent.components())?, name))
    }

    /// Opens (creating as needed) each directory along `components`, refusing links.
    fn walk<'a>(&self, components: impl Iterator<Item = Component<'a>>) -> io::Result<OwnedFd> {
        let mut here = rustix::fs::openat(&self.root, ".", dir_flags(), Mode::empty())?;
        for c in components {
            let Component::Normal(name) = c else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "only plain names are created beneath the root",
                ));
            };
            match rustix::fs::mkdirat(&here, name, Mode::from(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            here = rustix::fs::openat(&here, name, dir_flags(), Mode::empty())?;
        }
        Ok(here)
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn never_writes_through_a_symlink() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("esc")).unwrap();
        let b = Beneath::open(dir.path()).unwrap();
        assert!(b.create_file(Path::new("esc/pwned")).is_err());
        assert!(b.create_dir_all(Path::new("esc/sub")).is_err());
        assert!(b
            .create_symlink(Path::new("esc/l"), Path::new("/"))
            .is_err());
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("f")).unwrap();
        assert!(
            b.create_file(Path::new("f")).is_err(),
            "a final link is not opened"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn creates_nested_files() {
        let dir = tempfile::tempdir().unwrap();
        let b = Beneath::open(dir.path()).unwrap();
        b.create_file(Path::new("proc/1/comm"))
            .unwrap()
            .write_all(b"x\n")
            .unwrap();
        b.create_dir_all(Path::new("proc/1/fd")).unwrap();
        b.create_symlink(Path::new("proc/1/fd/3"), Path::new("/dev/dri/card0"))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("proc/1/comm")).unwrap(),
            "x\n"
        );
    }
}
