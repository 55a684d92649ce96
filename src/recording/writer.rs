//! Which process writes a recording: `record` keeps its pid and start time in `meta`
//! (`recorder`), so `record --force` onto a recording still being written is refused, naming
//! the writer, instead of destroying that run. The check reads the file (never locks it: a lock
//! on a file on NFS would be emulated with the byte-range locks SQLite itself takes).

use crate::root::Root;
use crate::sources::proc_pid;
use std::path::Path;

/// The `meta` key holding "PID START_TICKS" of the writing process.
pub const RECORDER_KEY: &str = "recorder";

/// The value of [`RECORDER_KEY`] for this process.
pub fn this_recorder() -> String {
    let pid = std::process::id();
    let start = proc_pid::read_start_ticks(&Root::live(), pid)
        .ok()
        .flatten()
        .unwrap_or(0);
    format!("{pid} {start}")
}

/// The pid of the process still writing the recording at `path`: its `recorder` names a process
/// that runs now with the same start time, and its `-wal` is still beside it. `None` for a
/// closed recording, one whose writer is gone, or a file that is no recording.
pub fn live_writer(path: &Path) -> Option<u32> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if Path::new(&wal).symlink_metadata().is_err() {
        return None;
    }
    let rec = super::open(path).ok()?;
    let (pid, start) = rec.meta.get(RECORDER_KEY)?.split_once(' ')?;
    let (pid, start): (u32, u64) = (pid.parse().ok()?, start.parse().ok()?);
    let now = proc_pid::read_start_ticks(&Root::live(), pid)
        .ok()
        .flatten()?;
    (now == start && pid != std::process::id()).then_some(pid)
}
