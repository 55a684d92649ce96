//! What unpacking one archive may cost in total: bytes, entries, directories (those its paths
//! imply as well as those it names), depth, symlink text and time.
//!
//! Every entry is admitted against the budget from what the tar reader will really unpack
//! ([`tar::Entry::size`], which a pax `size` record overrides), not from the ustar header. The
//! budget is counted in the validation pass, before anything is created, and again while
//! unpacking, so an archive that changes between the two passes is still held to it.

use crate::clock::Clock;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Largest single file accepted from an archive.
pub const MAX_ENTRY_BYTES: u64 = 16 << 20;
/// Largest unpacked tree accepted from an archive.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Most entries accepted from an archive.
pub const MAX_ENTRIES: usize = 200_000;
/// Most directories an archive may create, counting the parents its paths imply.
pub const MAX_DIRS: usize = 200_000;
/// Deepest path accepted (a capture tree is a dozen levels deep). Keeping trees shallow also
/// keeps the cleanup of a refused archive, which holds one descriptor per level, far from any
/// descriptor limit.
pub const MAX_DEPTH: usize = 64;
/// Longest entry name or symlink target (the kernel's `PATH_MAX`).
pub const MAX_NAME_BYTES: usize = 4096;
/// Symlink names and targets held in memory until the links are created, in total.
pub const MAX_LINK_BYTES: u64 = 16 << 20;
/// Longest time validating and unpacking one archive may take.
pub const MAX_TIME: Duration = Duration::from_secs(120);

/// The limit an archive exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Limit {
    /// One file's size.
    #[error("file larger than 16 MiB (sizes from pax records count)")]
    EntryBytes,
    /// The unpacked total.
    #[error("unpacked tree would exceed 1 GiB")]
    TotalBytes,
    /// The entry count.
    #[error("the archive has more than {MAX_ENTRIES} entries")]
    Entries,
    /// Directories named and implied.
    #[error("the archive would create more than {MAX_DIRS} directories (counting the parents its paths imply)")]
    Dirs,
    /// Path depth.
    #[error("path deeper than {MAX_DEPTH} levels")]
    Depth,
    /// One name or target.
    #[error("name or symlink target longer than {MAX_NAME_BYTES} bytes")]
    NameBytes,
    /// All symlink text.
    #[error("symlink names and targets exceed 16 MiB in total")]
    LinkBytes,
    /// Time.
    #[error("unpacking took longer than {} s", MAX_TIME.as_secs())]
    Time,
}

/// What one entry asks of the budget.
#[derive(Debug)]
pub(super) struct Ask<'a> {
    /// Its safe relative path.
    pub rel: &'a Path,
    /// Whether it is a directory (its own path is then a directory too).
    pub is_dir: bool,
    /// Its symlink target, if it is one.
    pub target: Option<&'a Path>,
}

/// The running totals of one pass over an archive.
#[derive(Debug)]
pub(super) struct Budget<'c> {
    clock: &'c dyn Clock,
    started: Instant,
    entries: usize,
    bytes: u64,
    dirs: usize,
    link_bytes: u64,
    /// The directories the previous entry needed.
    prev_dirs: PathBuf,
}

impl<'c> Budget<'c> {
    /// A budget whose time runs from `started`.
    pub(super) fn new(clock: &'c dyn Clock, started: Instant) -> Self {
        Budget {
            clock,
            started,
            entries: 0,
            bytes: 0,
            dirs: 0,
            link_bytes: 0,
            prev_dirs: PathBuf::new(),
        }
    }

    /// Counts an entry header before it is looked at (any entry, even one that carries no file).
    pub(super) fn entry(&mut self, name_bytes: usize) -> Result<(), Limit> {
        if self.clock.now().saturating_duration_since(self.started) > MAX_TIME {
            return Err(Limit::Time);
        }
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(Limit::Entries);
        }
        if name_bytes > MAX_NAME_BYTES {
            return Err(Limit::NameBytes);
        }
        Ok(())
    }

    /// Counts the data of an entry, as the tar reader will unpack it.
    pub(super) fn data(&mut self, size: u64) -> Result<(), Limit> {
        if size > MAX_ENTRY_BYTES {
            return Err(Limit::EntryBytes);
        }
        self.bytes = self.bytes.saturating_add(size);
        if self.bytes > MAX_TOTAL_BYTES {
            return Err(Limit::TotalBytes);
        }
        Ok(())
    }

    /// Admits a validated entry (its data counted by [`Budget::data`]): its depth, the directories it creates and its symlink text.
    pub(super) fn admit(&mut self, ask: &Ask<'_>) -> Result<(), Limit> {
        if ask.rel.components().count() > MAX_DEPTH {
            return Err(Limit::Depth);
        }
        let dirs = match ask.is_dir {
            true => ask.rel,
            false => ask.rel.parent().unwrap_or(Path::new("")),
        };
        self.dirs = self.dirs.saturating_add(new_dirs(&self.prev_dirs, dirs));
        if self.dirs > MAX_DIRS {
            return Err(Limit::Dirs);
        }
        self.prev_dirs = dirs.to_path_buf();
        if let Some(target) = ask.target {
            let len = target.as_os_str().len();
            if len > MAX_NAME_BYTES {
                return Err(Limit::NameBytes);
            }
            let text = ask.rel.as_os_str().len().saturating_add(len) as u64;
            self.link_bytes = self.link_bytes.saturating_add(text);
            if self.link_bytes > MAX_LINK_BYTES {
                return Err(Limit::LinkBytes);
            }
        }
        Ok(())
    }
}

/// Directories of `dirs` that are not in `prev` (the previous entry's): an upper bound on the
/// directories this entry creates, exact for archives in tree order, found without remembering
/// every directory seen.
fn new_dirs(prev: &Path, dirs: &Path) -> usize {
    let shared = prev
        .components()
        .zip(dirs.components())
        .take_while(|(a, b)| a == b)
        .count();
    dirs.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
        .saturating_sub(shared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn ask(rel: &str, is_dir: bool) -> Ask<'_> {
        Ask {
            rel: Path::new(rel),
            is_dir,
            target: None,
        }
    }

    #[test]
    fn implied_directories_count_once_in_tree_order() {
        let clock = ManualClock::new();
        let mut b = Budget::new(clock.as_ref(), clock.now());
        for (rel, is_dir) in [
            ("proc", true),
            ("proc/1/comm", false),
            ("proc/1/fd/3", false),
            ("proc/1/fd/4", false),
            ("proc/2/fdinfo/3", false),
            ("sys/class/drm/card0", true),
        ] {
            b.admit(&ask(rel, is_dir)).unwrap();
        }
        // proc, proc/1, proc/1/fd, proc/2, proc/2/fdinfo, sys, sys/class, sys/class/drm, …/card0
        assert_eq!(b.dirs, 9);
    }

    #[test]
    fn a_deep_path_is_refused() {
        let clock = ManualClock::new();
        let mut b = Budget::new(clock.as_ref(), clock.now());
        let deep = vec!["d"; MAX_DEPTH + 1].join("/");
        assert_eq!(b.admit(&ask(&deep, true)), Err(Limit::Depth));
        let ok = vec!["d"; MAX_DEPTH].join("/");
        assert_eq!(b.admit(&ask(&ok, true)), Ok(()));
    }

    #[test]
    fn symlink_text_has_a_total() {
        let clock = ManualClock::new();
        let mut b = Budget::new(clock.as_ref(), clock.now());
        let target = PathBuf::from("t".repeat(4000));
        let mut refused = None;
        for i in 0..10_000 {
            let rel = PathBuf::from(format!("l{i}"));
            let a = Ask {
                rel: &rel,
                is_dir: false,
                target: Some(&target),
            };
            if let Err(e) = b.admit(&a) {
                refused = Some((i, e));
                break;
            }
        }
        let (at, limit) = refused.unwrap();
        assert_eq!(limit, Limit::LinkBytes);
        assert!((4000..4200).contains(&at), "refused at link {at}");
    }

    #[test]
    fn time_runs_out() {
        let clock = ManualClock::new();
        let mut b = Budget::new(clock.as_ref(), clock.now());
        b.entry(10).unwrap();
        clock.advance(MAX_TIME + Duration::from_secs(1));
        assert_eq!(b.entry(10), Err(Limit::Time));
    }

    #[test]
    fn sizes_add_up() {
        let clock = ManualClock::new();
        let mut b = Budget::new(clock.as_ref(), clock.now());
        assert_eq!(b.data(MAX_ENTRY_BYTES + 1), Err(Limit::EntryBytes));
        for _ in 0..64 {
            b.data(MAX_ENTRY_BYTES).unwrap();
        }
        assert_eq!(b.data(1), Err(Limit::TotalBytes));
    }
}
