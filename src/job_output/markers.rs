//! The phase-marker file: a plain file in a private (0700) temporary directory, named to the job
//! in `GPULEDGER_MARKERS`, that gpuledger tails. Appending a line works from any language
//! (`echo "epoch 2" >> "$GPULEDGER_MARKERS"`) and never blocks the job, which a FIFO would when
//! nobody reads it. The job may replace the file with anything; it is read like every other
//! file a user controls ([`crate::root::UserTree`]): non-blocking, regular files only, bounded
//! per read and in time.

use super::{Collector, SCAN_BYTES};
use crate::root::{Root, UserTree};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The file's name inside its directory.
const NAME: &str = "markers";
/// The most bytes taken from the file per read: a job that swaps in a huge or endless file costs
/// one bounded read per poll, and the last read at the job's end is bounded too.
pub const MARKER_READ_BYTES: u64 = 1 << 20;
/// Time one read of the marker file may take.
const READ_BUDGET: Duration = Duration::from_secs(1);

/// The marker file and how far it has been read.
#[derive(Debug)]
pub struct MarkerFile {
    _dir: tempfile::TempDir,
    /// The directory, read under [`Root::user_tree`]'s rule: the job may swap the file for a
    /// FIFO, a device or a link, and then its markers are lost, never gpuledger's run.
    tree: UserTree,
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl MarkerFile {
    /// Creates an empty marker file in a new private (0700) temporary directory, removed when
    /// this is dropped.
    pub fn create() -> io::Result<MarkerFile> {
        let dir = crate::private::dir(crate::private::Kind::Markers)?;
        let path = dir.path().join(NAME);
        crate::private::create_file(&path)?;
        let tree = Root::live().user_tree(dir.path(), READ_BUDGET)?;
        Ok(MarkerFile {
            _dir: dir,
            tree,
            path,
            offset: 0,
            partial: Vec::new(),
        })
    }

    /// Its path, for the job's environment.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the lines appended since the last call into `sink`, stamped `t_ms`, at most
    /// [`MARKER_READ_BYTES`] of them. A file that shrank (the job truncated it with `>`) is read
    /// again from its start.
    pub fn read_new(&mut self, t_ms: u64, sink: &Mutex<Collector>) -> io::Result<()> {
        self.tree.renew(READ_BUDGET);
        let mut chunk = match self.tree.read_at(NAME, self.offset, MARKER_READ_BYTES) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if chunk.len < self.offset {
            self.offset = 0;
            self.partial.clear();
            chunk = self.tree.read_at(NAME, 0, MARKER_READ_BYTES)?;
        }
        self.offset += chunk.bytes.len() as u64;
        let mut rest = chunk.bytes.as_slice();
        while let Some(at) = rest.iter().position(|b| *b == b'\n') {
            push_bounded(&mut self.partial, &rest[..at]);
            if !self.partial.iter().all(u8::is_ascii_whitespace) {
                let text = self.partial.trim_ascii();
                super::collect::lock(sink).marker(t_ms, text);
            }
            self.partial.clear();
            rest = &rest[at + 1..];
        }
        push_bounded(&mut self.partial, rest);
        Ok(())
    }
}

/// Appends at most what keeps `line` within [`SCAN_BYTES`].
pub(super) fn push_bounded(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = SCAN_BYTES.saturating_sub(line.len());
    line.extend_from_slice(&bytes[..bytes.len().min(room)]);
}
