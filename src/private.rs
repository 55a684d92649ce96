//! Private scratch space: every directory gpuledger makes for itself is mode 0700 and every file
//! in it 0600, set explicitly whatever the umask (under umask 000 a `mkdir(…, 0777)` would leave
//! a copy of a recording readable, and a tree writable, by every user).
//!
//! Directory names carry the creating pid (`gpuledger-KIND-PID-XXXXXX`), so a run that was
//! killed before it could remove its directory is cleaned up by the next run of the same user:
//! the first private directory a process makes removes those of dead gpuledger processes owned
//! by the same user. Removal never follows a symbolic link.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Once;

/// Mode of every private directory.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every private file.
pub const FILE_MODE: u32 = 0o600;
/// The prefix every private directory's name starts with.
const PREFIX: &str = "gpuledger-";

/// What a private directory holds; part of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A recording and its `-wal`, copied to be read.
    Read,
    /// A capture archive unpacked to be read as a root.
    Root,
    /// A capture being written before it is packed.
    Capture,
    /// The job's marker file.
    Markers,
    /// The trace channel.
    Trace,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Read,
        Kind::Root,
        Kind::Capture,
        Kind::Markers,
        Kind::Trace,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Root => "root",
            Kind::Capture => "capture",
            Kind::Markers => "markers",
            Kind::Trace => "trace",
        }
    }
}

/// A new private directory in the temporary directory (`$TMPDIR`, else /tmp).
pub fn dir(kind: Kind) -> io::Result<tempfile::TempDir> {
    dir_in(kind, &std::env::temp_dir())
}

/// A new private directory inside `parent`, removed when the value is dropped.
pub fn dir_in(kind: Kind, parent: &Path) -> io::Result<tempfile::TempDir> {
    static CLEAN: Once = Once::new();
    CLEAN.call_once(|| {
        clean_leftovers(&std::env::temp_dir());
    });
    let dir = tempfile::Builder::new()
        .prefix(&format!(
            "{PREFIX}{}-{}-",
            kind.as_str(),
            std::process::id()
        ))
        .permissions(std::fs::Permissions::from_mode(DIR_MODE))
        .tempdir_in(parent)?;
    // The mode asked of mkdir passes through the umask, which only removes bits; set it anyway
    // so the directory is exactly 0700 whatever the umask and filesystem did.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(DIR_MODE))?;
    Ok(dir)
}

/// Creates the new file `path` (never an existing one, never through a symbolic link), mode 0600.
pub fn create_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Removes the private directories in `parent` that gpuledger processes of this user left when
/// they were killed; returns how many were removed. A directory whose creator still runs (or
/// whose pid was reused by a running process) is left alone.
pub fn clean_leftovers(parent: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let me = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(creator_pid) else {
            continue;
        };
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && !alive(pid) && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in a private directory's name (`gpuledger-KIND-PID-XXXXXX`).
fn creator_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (kind, rest) = rest.split_once('-')?;
    Kind::ALL.iter().find(|k| k.as_str() == kind)?;
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty()).then_some(())?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// Whether a process with this pid exists (signal 0 reaches it or is merely not permitted).
fn alive(pid: u32) -> bool {
    let Some(p) = rustix::process::Pid::from_raw(pid as i32) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(p),
        Err(rustix::io::Errno::SRCH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` under umask 000 and restores the umask after.
    fn under_umask_000<T>(f: impl FnOnce() -> T) -> T {
        let old = rustix::process::umask(rustix::fs::Mode::empty());
        let out = f();
        rustix::process::umask(old);
        out
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn directories_and_files_are_private_under_umask_000() {
        let parent = tempfile::tempdir().unwrap();
        let (dir, file) = under_umask_000(|| {
            let dir = dir_in(Kind::Read, parent.path()).unwrap();
            let file = dir.path().join("f");
            create_file(&file).unwrap();
            (dir, file)
        });
        assert_eq!(mode(dir.path()), 0o700);
        assert_eq!(mode(&file), 0o600);
    }

    #[test]
    fn create_file_refuses_an_existing_file_and_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "secret").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_file(&target).is_err());
        assert!(create_file(&link).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret");
    }

    #[test]
    fn leftovers_of_dead_runs_go_and_live_or_foreign_ones_stay() {
        let parent = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mk = |name: &str| {
            let p = parent.path().join(name);
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join("copy"), "x").unwrap();
            p
        };
        let stale = mk(&format!("gpuledger-read-{dead}-abc123"));
        let live = mk(&format!("gpuledger-read-{}-abc123", std::process::id()));
        let unknown = mk(&format!("gpuledger-other-{dead}-abc123"));
        let outside = tempfile::tempdir().unwrap();
        let link = parent.path().join(format!("gpuledger-root-{dead}-link"));
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        assert_eq!(clean_leftovers(parent.path()), 1);
        assert!(!stale.exists());
        assert!(live.exists() && unknown.exists());
        assert!(outside.path().join("keep").exists());
    }

    #[test]
    fn the_creator_pid_is_read_from_the_name_only() {
        assert_eq!(creator_pid("gpuledger-read-42-Xy7"), Some(42));
        assert_eq!(creator_pid("gpuledger-trace-7-a"), Some(7));
        assert_eq!(creator_pid("gpuledger-read-42-"), None);
        assert_eq!(creator_pid("gpuledger-read-x-Xy7"), None);
        assert_eq!(creator_pid("gpuledger-read-0-Xy7"), None);
        assert_eq!(creator_pid("gpuledger-nope-42-Xy7"), None);
        assert_eq!(creator_pid("other-read-42-Xy7"), None);
    }
}
