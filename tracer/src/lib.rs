//! gpuledger's tracer: a library loaded into a job that reports the job's GPU memory API calls
//! (which call allocated, pinned, registered or mapped which bytes, on which device) to
//! `gpuledger record` over the channel gpuledger started the job with ([`channel`]: the inherited
//! socket in `GPULEDGER_TRACE_FD`, else the socket named in `GPULEDGER_TRACE_SOCKET`).
//!
//! NVIDIA: the CUDA driver loads it through `CUDA_INJECTION64_PATH` and calls
//! [`InitializeInjection`]; it subscribes to CUPTI's callbacks for the memory calls only.
//!
//! Intel Level Zero: preloaded (`LD_PRELOAD`), it interposes the loader's memory entry points
//! (`ze` module) and forwards each call to the loader.
//!
//! It must never harm the job: every exported function catches panics; the callback neither
//! blocks nor allocates (a static bounded ring, events dropped and counted when it is full or the
//! reader is slow or gone); when CUPTI or the driver version is missing, tracing is off and the
//! process says so once on stderr.

mod channel;
mod cupti;
mod decode;
mod find;
mod ring;
mod writer;
mod ze;

use gpuledger_trace_wire::{Api, Op, Platform, FD_ENV, SOCKET_ENV};
use std::ffi::c_int;

fn initialize() {
    let Some(channel) = channel::Channel::from_env(|k| std::env::var(k).ok()) else {
        eprintln!(
            "gpuledger-tracer: neither {FD_ENV} (open in this process) nor {SOCKET_ENV} is \
             set; tracing off"
        );
        return;
    };
    if !writer::init(channel) {
        return;
    }
    if let Err(off) = cupti::start() {
        eprintln!(
            "gpuledger-tracer: tracing off in pid {}: {} ({})",
            std::process::id(),
            off.reason.describe(),
            off.detail
        );
        let mut e = writer::stamp(Api::Tracer, Op::Off, Platform::Cuda);
        e.result = off.reason.as_result();
        writer::emit(&e);
        writer::flush_now();
    }
}

/// Called by the CUDA driver at `cuInit` when this library is named in `CUDA_INJECTION64_PATH`.
/// Returns 1 (success) whatever happened: a tracer that cannot trace leaves the job alone.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    let _ = std::panic::catch_unwind(initialize);
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuledger_trace_wire::{Event, OffReason};
    use std::os::unix::net::UnixDatagram;
    use std::time::Duration;

    fn next(sock: &UnixDatagram) -> Vec<Event> {
        let mut buf = [0u8; 8192];
        let n = sock.recv(&mut buf).expect("an event within the timeout");
        Event::decode_all(&buf[..n]).unwrap()
    }

    /// The only test that initialises the process-wide tracer: without a loaded CUDA driver it
    /// says off once (an `off` event and the final dropped count), returns success, and events
    /// emitted afterwards still reach the socket through the writer thread.
    #[test]
    fn without_cuda_tracing_is_off_and_the_job_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        std::env::set_var(SOCKET_ENV, &path);
        assert_eq!(InitializeInjection(), 1);
        let first = next(&sock);
        assert_eq!(first[0].op, Op::Off);
        assert_eq!(
            OffReason::from_code(first[0].result),
            Some(OffReason::UnknownRuntime)
        );
        let fin = next(&sock);
        assert_eq!((fin[0].op, fin[0].bytes), (Op::Dropped, 0));
        let mut e = writer::stamp(Api::Device, Op::Alloc, Platform::Cuda);
        e.bytes = 4096;
        writer::emit(&e);
        let got = next(&sock);
        assert_eq!(
            (got[0].op, got[0].bytes, got[0].pid),
            (Op::Alloc, 4096, std::process::id())
        );
        // A second initialisation (a driver calling it twice) does nothing.
        assert_eq!(InitializeInjection(), 1);
    }
}
