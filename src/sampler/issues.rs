//! Turning a failed read into a count or a named note, so that nothing a scan skips is skipped
//! silently: a process that exits mid-scan is *vanished* (normal on a live machine), one whose files
//! are other users' is *unreadable* (summarised), and a file that is there but unusable (a FIFO, a
//! device node, a file over the read cap, a symlink that leads nowhere inside a captured root) is a
//! [`ScanIssue`] naming the file and the reason.

use crate::root::{Root, MAX_FILE_BYTES};
use crate::snapshot::{IssueReason, ScanIssue, ScanStats, MAX_LISTED_ISSUES};
use rustix::io::Errno;
use std::io;

/// What a failed read means for the scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The process (or the fd) went away between listing and reading.
    Vanished,
    /// Permission denied: another user's process.
    Denied,
    /// The file is not there in a captured root (optional files may be absent).
    Absent,
    /// The file is there but cannot be used.
    Issue(IssueReason),
}

/// Classifies `err` from a read through `root` (see `root/mod.rs` for the errors it makes).
pub(super) fn classify(err: &io::Error, live: bool) -> Outcome {
    let errno = err.raw_os_error().map(Errno::from_raw_os_error);
    match (err.kind(), errno) {
        (io::ErrorKind::PermissionDenied, _) => Outcome::Denied,
        (_, Some(Errno::SRCH)) => Outcome::Vanished,
        (io::ErrorKind::NotFound, _) if live => Outcome::Vanished,
        (io::ErrorKind::NotFound, _) => Outcome::Absent,
        (_, Some(Errno::INVAL)) => Outcome::Issue(IssueReason::NotASymlink),
        (_, Some(Errno::NOTDIR)) => Outcome::Issue(IssueReason::NotADirectory),
        (_, Some(Errno::LOOP)) => Outcome::Issue(IssueReason::LinkLoop),
        // `root/mod.rs` reports a non-regular file as InvalidInput and an over-cap one as InvalidData,
        // both without an errno.
        (io::ErrorKind::InvalidInput, None) => Outcome::Issue(IssueReason::NotRegularFile),
        (io::ErrorKind::InvalidData, None) => Outcome::Issue(IssueReason::TooLarge),
        _ if err
            .to_string()
            .contains("too many levels of symbolic links") =>
        {
            Outcome::Issue(IssueReason::LinkLoop)
        }
        _ => Outcome::Issue(IssueReason::Unreadable),
    }
}

/// Records that `rel` could not be used for `reason`, keeping the first [`MAX_LISTED_ISSUES`].
pub(super) fn note(stats: &mut ScanStats, rel: &str, reason: IssueReason, detail: String) {
    stats.issues_total = stats.issues_total.saturating_add(1);
    if stats.issues.len() < MAX_LISTED_ISSUES {
        stats.issues.push(ScanIssue {
            path: rel.to_string(),
            reason,
            detail,
        });
    }
}

/// Records a missing required file: a dangling symlink (its target resolved inside the root leads
/// nowhere, e.g. a link that tried to escape the tree) is named as such.
pub(super) fn note_absent(stats: &mut ScanStats, root: &Root, rel: &str) {
    match root.read_link(rel) {
        Ok(target) => note(
            stats,
            rel,
            IssueReason::DanglingLink,
            format!(
                "symlink to {} leads nowhere inside the captured root (links never escape it)",
                target.display()
            ),
        ),
        Err(_) => note(stats, rel, IssueReason::Missing, "not in the tree".into()),
    }
}

/// Handles a failed read of `rel`: counts it, notes it, and says what happened. `required` files
/// (comm, fdinfo of a DRM fd, meminfo) are noted when absent from a captured root; optional ones
/// (environ, smaps) are not.
pub(super) fn handle(
    stats: &mut ScanStats,
    root: &Root,
    rel: &str,
    err: &io::Error,
    required: bool,
) -> Outcome {
    let outcome = match classify(err, root.is_live()) {
        Outcome::Absent if process_gone(root, rel) => Outcome::Vanished,
        o => o,
    };
    match &outcome {
        Outcome::Absent if required => note_absent(stats, root, rel),
        Outcome::Issue(reason) => note(stats, rel, *reason, detail(*reason, err)),
        _ => {}
    }
    outcome
}

/// Whether `rel` is under a `proc/PID/` directory that is no longer there: a process that ended
/// while a `simulate --live` tree was being rewritten, not a defect of the tree.
fn process_gone(root: &Root, rel: &str) -> bool {
    let mut parts = rel.splitn(3, '/');
    match (parts.next(), parts.next()) {
        (Some("proc"), Some(pid)) if pid.bytes().all(|b| b.is_ascii_digit()) => !pid
            .parse()
            .is_ok_and(|pid| root.size_of(crate::layout::proc_dir(pid)).is_ok()),
        _ => false,
    }
}

fn detail(reason: IssueReason, err: &io::Error) -> String {
    match reason {
        IssueReason::NotRegularFile => {
            "not a regular file (a FIFO, socket, device node or directory is never read)".into()
        }
        IssueReason::TooLarge => format!(
            "larger than the {} MiB read cap (never truncated)",
            MAX_FILE_BYTES >> 20
        ),
        IssueReason::NotASymlink => "an fd entry that is not a symlink".into(),
        IssueReason::NotADirectory => "not a directory".into(),
        IssueReason::LinkLoop => "symlink loop or symlink where a file was expected".into(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_errors() {
        let os = |e: Errno| io::Error::from_raw_os_error(e.raw_os_error());
        assert_eq!(classify(&os(Errno::NOENT), true), Outcome::Vanished);
        assert_eq!(classify(&os(Errno::NOENT), false), Outcome::Absent);
        assert_eq!(classify(&os(Errno::SRCH), false), Outcome::Vanished);
        assert_eq!(classify(&os(Errno::ACCESS), true), Outcome::Denied);
        assert_eq!(
            classify(&os(Errno::NOTDIR), false),
            Outcome::Issue(IssueReason::NotADirectory)
        );
        let big = io::Error::new(io::ErrorKind::InvalidData, "x is larger than 4 bytes");
        assert_eq!(classify(&big, false), Outcome::Issue(IssueReason::TooLarge));
        let fifo = io::Error::new(io::ErrorKind::InvalidInput, "x is not a regular file");
        assert_eq!(
            classify(&fifo, true),
            Outcome::Issue(IssueReason::NotRegularFile)
        );
    }

    #[test]
    fn a_process_gone_from_a_tree_vanished() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/7/fd")).unwrap();
        let root = Root::open(dir.path()).unwrap();
        let gone = io::Error::from(io::ErrorKind::NotFound);
        let mut stats = ScanStats::default();
        assert_eq!(
            handle(&mut stats, &root, "proc/8/fd", &gone, true),
            Outcome::Vanished
        );
        assert_eq!(
            handle(&mut stats, &root, "proc/7/comm", &gone, true),
            Outcome::Absent
        );
        assert_eq!(stats.issues_total, 1);
        assert_eq!(stats.issues[0].reason, IssueReason::Missing);
    }

    #[test]
    fn list_is_capped_but_total_counts_all() {
        let mut stats = ScanStats::default();
        for i in 0..MAX_LISTED_ISSUES + 5 {
            note(
                &mut stats,
                &format!("proc/{i}/comm"),
                IssueReason::TooLarge,
                String::new(),
            );
        }
        assert_eq!(stats.issues.len(), MAX_LISTED_ISSUES);
        assert_eq!(stats.issues_total as usize, MAX_LISTED_ISSUES + 5);
    }
}
