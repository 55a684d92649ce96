//! A reader that stops at a byte allowance the caller sets, entry by entry.
//!
//! The tar reader consumes headers, GNU long names and pax records before it hands out an entry,
//! and it buffers long names and pax records in memory. A 52 KB `.tar.zst` can decompress to a
//! 10 GB long-name record, so the bytes read between two entries must be bounded by us, below the
//! tar reader, not by checks on the entry it finally returns.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

/// The allowance shared between the archive loop (which sets it) and the reader (which spends it).
#[derive(Debug, Default)]
pub(super) struct Meter {
    left: Cell<u64>,
    exhausted: Cell<bool>,
}

impl Meter {
    /// Allows `bytes` more to be read from now on (replacing what was left).
    pub(super) fn allow(&self, bytes: u64) {
        self.left.set(bytes);
    }

    /// Whether a read was refused because the allowance ran out.
    pub(super) fn exhausted(&self) -> bool {
        self.exhausted.get()
    }
}

/// Wraps a reader; a read past the allowance fails instead of returning data.
pub(super) struct Metered<R> {
    inner: R,
    meter: Rc<Meter>,
}

impl<R: Read> Metered<R> {
    /// `inner`, spending from `meter`.
    pub(super) fn new(inner: R, meter: Rc<Meter>) -> Self {
        Metered { inner, meter }
    }
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.meter.left.get();
        if left == 0 && !buf.is_empty() {
            self.meter.exhausted.set(true);
            return Err(io::Error::other("archive read allowance exhausted"));
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..want])?;
        self.meter.left.set(left - got as u64);
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_allowance() {
        let meter = Rc::new(Meter::default());
        let mut r = Metered::new(io::repeat(7), meter.clone());
        meter.allow(10);
        let mut buf = [0u8; 64];
        assert_eq!(r.read(&mut buf).unwrap(), 10);
        assert!(r.read(&mut buf).is_err());
        assert!(meter.exhausted());
        meter.allow(3);
        assert_eq!(r.read(&mut buf).unwrap(), 3);
    }
}
