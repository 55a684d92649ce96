//! The phase-marker file: a plain file in a private temporary directory, named to the job in
//! `GPULEDGER_MARKERS`, that gpuledger tails. Appending a line works from any language
//! (`echo "epoch 2" >> "$GPULEDGER_MARKERS"`) and never blocks the job, which a FIFO would when
//! nobody reads it.

use super::{Collector, SCAN_BYTES};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The marker file and how far it has been read.
#[derive(Debug)]
pub struct MarkerFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl MarkerFile {
    /// Creates an empty marker file in a new temporary directory.
    pub fn create() -> io::Result<MarkerFile> {
        let dir = tempfile::Builder::new()
            .prefix("gpuledger-markers-")
            .tempdir()?;
        let path = dir.path().join("markers");
        File::create(&path)?;
        Ok(MarkerFile {
            _dir: dir,
            path,
            offset: 0,
            partial: Vec::new(),
        })
    }

    /// Its path, for the job's environment.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the lines appended since the last call into `sink`, stamped `t_ms`. A file that
    /// shrank (the job truncated it with `>`) is read again from its start.
    pub fn read_new(&mut self, t_ms: u64, sink: &Mutex<Collector>) -> io::Result<()> {
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if f.metadata()?.len() < self.offset {
            self.offset = 0;
            self.partial.clear();
        }
        f.seek(SeekFrom::Start(self.offset))?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            self.offset += n as u64;
            let mut rest = &buf[..n];
            while let Some(at) = rest.iter().position(|b| *b == b'\n') {
                push_bounded(&mut self.partial, &rest[..at]);
                if !self.partial.iter().all(u8::is_ascii_whitespace) {
                    let text = self.partial.trim_ascii();
                    super::pump::lock(sink).marker(t_ms, text);
                }
                self.partial.clear();
                rest = &rest[at + 1..];
            }
            push_bounded(&mut self.partial, rest);
        }
    }
}

/// Appends at most what keeps `line` within [`SCAN_BYTES`].
pub(super) fn push_bounded(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = SCAN_BYTES.saturating_sub(line.len());
    line.extend_from_slice(&bytes[..bytes.len().min(room)]);
}
