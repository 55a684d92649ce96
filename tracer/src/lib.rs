//! gpuledger's tracer: a library loaded into a job that reports the job's GPU memory API calls
//! (which call allocated, pinned, registered or mapped which bytes, on which device) to
//! `gpuledger record` over the Unix datagram socket named in `GPULEDGER_TRACE_SOCKET`.
//!
//! NVIDIA: the CUDA driver loads it through `CUDA_INJECTION64_PATH` and calls
//! [`InitializeInjection`]; it subscribes to CUPTI's callbacks for the memory calls only.
//!
//! It must never harm the job: every exported function catches panics; the callback neither
//! blocks nor allocates (a static bounded ring, events dropped and counted when it is full or the
//! reader is slow or gone); when CUPTI or the driver version is missing, tracing is off and the
//! process says so once on stderr.

mod cupti;
mod decode;
mod find;
mod ring;
mod writer;

use gpuledger_trace_wire::{Api, Op, Platform, SOCKET_ENV};
use std::ffi::c_int;

fn initialize() {
    let Some(socket) = std::env::var_os(SOCKET_ENV).filter(|s| !s.is_empty()) else {
        eprintln!("gpuledger-tracer: {SOCKET_ENV} is not set; tracing off");
        return;
    };
    if !writer::init(socket.into()) {
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
