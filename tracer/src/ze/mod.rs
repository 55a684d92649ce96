//! The Level Zero side: an `LD_PRELOAD` interposer of the loader's exported memory entry points.
//! Each exported function forwards to the loader's definition (`dlsym(RTLD_NEXT)`, resolved
//! once), then records the call: time, pid, tid, device ordinal, bytes, address, flags, result.
//! A residency call also records the allocation's own device (asked of the loader through
//! `zeMemGetAllocProperties`), so memory made resident on a *peer* device is its own kind,
//! [`Api::PeerResidency`] (compute-runtime#953).
//!
//! With `GPULEDGER_ZE_SKIP_PEER_RESIDENCY=1` (`experiment --control skip-peer-residency`), a peer
//! residency call is answered `ZE_RESULT_SUCCESS` without reaching the driver, and recorded with
//! the `SKIPPED` flag: a diagnostic that may slow or break the job.
//!
//! The bookkeeping never unwinds into the caller (`catch_unwind`), and does not block: events go
//! through the same bounded ring and writer thread as the CUDA side. An application that opens the
//! loader with `dlopen` and calls through `dlsym` of that handle bypasses the interposer.
//!
//! ref: Level Zero 1.8 `include/ze_api.h` (signatures, `ze_device_mem_alloc_desc_t`,
//! `ze_host_mem_alloc_desc_t`, `ze_context_desc_t`).

mod next;

use crate::writer::{emit, pid, stamp};
use gpuledger_trace_wire::{residency_flags, Api, Op, Platform, SKIP_PEER_RESIDENCY_ENV};
use next::{next, ordinal, owner, range_size, Handle, IpcHandle, ZeResult, SUCCESS, UNINITIALIZED};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Once;

static INIT: Once = Once::new();
static SKIP_PEER: AtomicBool = AtomicBool::new(false);
/// The process that last said tracing started (a forked child says it again).
static STARTED: AtomicU32 = AtomicU32::new(0);

/// The head of the allocation descriptors: `stype`, `pNext`, `flags`.
#[repr(C)]
struct DescHead {
    stype: u32,
    p_next: *const c_void,
    flags: u32,
}

fn init() {
    INIT.call_once(|| {
        SKIP_PEER.store(
            std::env::var_os(SKIP_PEER_RESIDENCY_ENV).is_some_and(|v| v == "1"),
            Ordering::Relaxed,
        );
        if let Some(c) = crate::channel::Channel::from_env(|k| std::env::var(k).ok()) {
            crate::writer::init(c);
        }
    });
    let me = pid();
    // A plain load first: the swap (a write to a shared line) happens once per process.
    if STARTED.load(Ordering::Relaxed) != me && STARTED.swap(me, Ordering::Relaxed) != me {
        emit(&stamp(Api::Tracer, Op::Started, Platform::LevelZero));
    }
}

/// One call's record.
struct Call {
    api: Api,
    op: Op,
    device: Option<u32>,
    bytes: u64,
    address: u64,
    flags: u32,
    result: ZeResult,
}

fn record(c: Call) {
    let _ = std::panic::catch_unwind(|| {
        init();
        if !crate::writer::enabled() {
            return;
        }
        let mut e = stamp(c.api, c.op, Platform::LevelZero);
        e.device = c.device;
        e.bytes = c.bytes;
        e.address = c.address;
        e.flags = c.flags;
        e.result = c.result as i32;
        emit(&e);
    });
}

/// The `flags` of a descriptor the caller passed (0 when it passed none).
///
/// # Safety
/// `desc` is null or points at a Level Zero descriptor, whose head is [`DescHead`].
unsafe fn desc_flags(desc: *const c_void) -> u32 {
    // SAFETY: the caller's contract above.
    unsafe { desc.cast::<DescHead>().as_ref() }.map_or(0, |d| d.flags)
}

/// The pointer a successful call wrote (0 otherwise).
///
/// # Safety
/// `pptr` is null or the caller's out-pointer, written by the loader when `r` is success.
unsafe fn written(r: ZeResult, pptr: *mut *mut c_void) -> u64 {
    if r != SUCCESS {
        return 0;
    }
    // SAFETY: the caller's contract above.
    unsafe { pptr.as_ref() }.map_or(0, |p| *p as u64)
}

/// Interposes `zeMemAllocDevice`.
///
/// # Safety
/// The Level Zero API's contract for `zeMemAllocDevice`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeMemAllocDevice(
    ctx: Handle,
    desc: *const c_void,
    size: usize,
    alignment: usize,
    dev: Handle,
    pptr: *mut *mut c_void,
) -> ZeResult {
    let Some(f) = next().alloc_device else {
        return UNINITIALIZED;
    };
    // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
    let r = unsafe { f(ctx, desc, size, alignment, dev, pptr) };
    record(Call {
        api: Api::Device,
        op: Op::Alloc,
        device: ordinal(dev),
        bytes: size as u64,
        // SAFETY: the API's contract: pptr is the caller's out-pointer, desc its descriptor.
        address: unsafe { written(r, pptr) },
        flags: unsafe { desc_flags(desc) },
        result: r,
    });
    r
}

/// Interposes `zeMemAllocHost`.
///
/// # Safety
/// The Level Zero API's contract for `zeMemAllocHost`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeMemAllocHost(
    ctx: Handle,
    desc: *const c_void,
    size: usize,
    alignment: usize,
    pptr: *mut *mut c_void,
) -> ZeResult {
    let Some(f) = next().alloc_host else {
        return UNINITIALIZED;
    };
    // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
    let r = unsafe { f(ctx, desc, size, alignment, pptr) };
    record(Call {
        api: Api::HostPinned,
        op: Op::Alloc,
        device: None,
        bytes: size as u64,
        // SAFETY: the API's contract: pptr is the caller's out-pointer, desc its descriptor.
        address: unsafe { written(r, pptr) },
        flags: unsafe { desc_flags(desc) },
        result: r,
    });
    r
}

/// Interposes `zeMemAllocShared`.
///
/// # Safety
/// The Level Zero API's contract for `zeMemAllocShared`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeMemAllocShared(
    ctx: Handle,
    device_desc: *const c_void,
    host_desc: *const c_void,
    size: usize,
    alignment: usize,
    dev: Handle,
    pptr: *mut *mut c_void,
) -> ZeResult {
    let Some(f) = next().alloc_shared else {
        return UNINITIALIZED;
    };
    // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
    let r = unsafe { f(ctx, device_desc, host_desc, size, alignment, dev, pptr) };
    record(Call {
        api: Api::Managed,
        op: Op::Alloc,
        device: ordinal(dev),
        bytes: size as u64,
        // SAFETY: the API's contract: pptr is the caller's out-pointer, device_desc its descriptor.
        address: unsafe { written(r, pptr) },
        flags: unsafe { desc_flags(device_desc) },
        result: r,
    });
    r
}

/// Interposes `zeMemFree` (the recording fills in what was freed from the allocation).
///
/// # Safety
/// The Level Zero API's contract for `zeMemFree`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeMemFree(ctx: Handle, ptr: *mut c_void) -> ZeResult {
    let Some(f) = next().free else {
        return UNINITIALIZED;
    };
    // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
    let r = unsafe { f(ctx, ptr) };
    record(Call {
        api: Api::Device,
        op: Op::Free,
        device: None,
        bytes: 0,
        address: ptr as u64,
        flags: 0,
        result: r,
    });
    r
}

/// A residency call: forwarded (or, for a peer with the skip control on, answered here) and
/// recorded with the target device and the allocation's own device.
fn residency(
    op: Op,
    forward: Option<next::Residency>,
    (ctx, dev, ptr, size): (Handle, Handle, *mut c_void, usize),
) -> ZeResult {
    let Some(f) = forward else {
        return UNINITIALIZED;
    };
    let own = ordinal(owner(ctx, ptr));
    let target = ordinal(dev);
    let peer = matches!((own, target), (Some(a), Some(b)) if a != b);
    let skip = peer && op == Op::MakeResident && {
        init();
        SKIP_PEER.load(Ordering::Relaxed)
    };
    let r = if skip {
        SUCCESS
    } else {
        // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
        unsafe { f(ctx, dev, ptr, size) }
    };
    record(Call {
        api: if peer {
            Api::PeerResidency
        } else {
            Api::Residency
        },
        op,
        device: target,
        bytes: size as u64,
        address: ptr as u64,
        flags: residency_flags(own, skip),
        result: r,
    });
    r
}

/// Interposes `zeContextMakeMemoryResident`.
///
/// # Safety
/// The Level Zero API's contract for `zeContextMakeMemoryResident`; arguments are forwarded
/// unchanged (or, for a peer with the skip control on, not at all).
#[no_mangle]
pub unsafe extern "C" fn zeContextMakeMemoryResident(
    ctx: Handle,
    dev: Handle,
    ptr: *mut c_void,
    size: usize,
) -> ZeResult {
    residency(
        Op::MakeResident,
        next().make_resident,
        (ctx, dev, ptr, size),
    )
}

/// Interposes `zeContextEvictMemory`.
///
/// # Safety
/// The Level Zero API's contract for `zeContextEvictMemory`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeContextEvictMemory(
    ctx: Handle,
    dev: Handle,
    ptr: *mut c_void,
    size: usize,
) -> ZeResult {
    residency(Op::Evict, next().evict, (ctx, dev, ptr, size))
}

/// Interposes `zeMemOpenIpcHandle`; the bytes are the opened range's size.
///
/// # Safety
/// The Level Zero API's contract for `zeMemOpenIpcHandle`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeMemOpenIpcHandle(
    ctx: Handle,
    dev: Handle,
    handle: IpcHandle,
    flags: u32,
    pptr: *mut *mut c_void,
) -> ZeResult {
    let Some(f) = next().open_ipc else {
        return UNINITIALIZED;
    };
    // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
    let r = unsafe { f(ctx, dev, handle, flags, pptr) };
    // SAFETY: the API's contract: pptr is the caller's out-pointer.
    let address = unsafe { written(r, pptr) };
    let bytes = if address == 0 {
        0
    } else {
        range_size(ctx, address as *const c_void)
    };
    record(Call {
        api: Api::Ipc,
        op: Op::OpenIpc,
        device: ordinal(dev),
        bytes,
        address,
        flags,
        result: r,
    });
    r
}

/// Interposes `zeMemCloseIpcHandle`; the bytes are the range's size, asked before closing.
///
/// # Safety
/// The Level Zero API's contract for `zeMemCloseIpcHandle`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeMemCloseIpcHandle(ctx: Handle, ptr: *const c_void) -> ZeResult {
    let Some(f) = next().close_ipc else {
        return UNINITIALIZED;
    };
    let bytes = range_size(ctx, ptr);
    // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
    let r = unsafe { f(ctx, ptr) };
    record(Call {
        api: Api::Ipc,
        op: Op::CloseIpc,
        device: None,
        bytes,
        address: ptr as u64,
        flags: 0,
        result: r,
    });
    r
}

/// Interposes `zeContextCreate`.
///
/// # Safety
/// The Level Zero API's contract for `zeContextCreate`; arguments are forwarded unchanged.
#[no_mangle]
pub unsafe extern "C" fn zeContextCreate(
    driver: Handle,
    desc: *const c_void,
    out: *mut Handle,
) -> ZeResult {
    let Some(f) = next().context_create else {
        return UNINITIALIZED;
    };
    // SAFETY: the caller's arguments, forwarded unchanged to the loader's definition.
    let r = unsafe { f(driver, desc, out) };
    record(Call {
        api: Api::Context,
        op: Op::CreateContext,
        device: None,
        bytes: 0,
        // SAFETY: the API's contract: out is the caller's out-pointer, desc its descriptor.
        address: unsafe { written(r, out.cast()) },
        flags: unsafe { desc_flags(desc) },
        result: r,
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a loader behind it (this test binary links none), every interposed call answers
    /// "uninitialized" and records nothing, instead of crashing the job.
    #[test]
    fn without_a_loader_calls_answer_uninitialized() {
        let null = std::ptr::null_mut();
        let mut p: *mut c_void = null;
        // SAFETY: no loader is found, so no argument is read or forwarded.
        let r = unsafe {
            [
                zeMemAllocDevice(null, null, 4096, 0, null, &mut p),
                zeMemAllocHost(null, null, 4096, 0, &mut p),
                zeMemFree(null, null),
                zeContextMakeMemoryResident(null, null, null, 4096),
                zeContextEvictMemory(null, null, null, 4096),
                zeMemCloseIpcHandle(null, null),
            ]
        };
        assert_eq!(r, [UNINITIALIZED; 6]);
        assert!(p.is_null());
        assert_eq!(ordinal(null), None);
    }
}
