//! The CUDA side: CUPTI found and opened at run time, a subscription to the driver-API callbacks
//! of the memory calls only, acting at API exit.
//!
//! ref: CUDA 13.0 `include/cupti_callbacks.h` (`cuptiSubscribe`, `cuptiEnableCallback`,
//! `cuptiUnsubscribe`, `CUpti_CallbackData`, `CUPTI_CB_DOMAIN_DRIVER_API` = 1,
//! `CUPTI_API_EXIT` = 1), `include/cupti_result.h` (`cuptiGetResultString`), `include/cuda.h`
//! (`cuDriverGetVersion`, `cuCtxGetDevice`).

use crate::decode::{cbid, decode, Where};
use crate::writer::{emit, stamp};
use gpuledger_trace_wire::{Api, OffReason, Op, Platform};
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const DOMAIN_DRIVER_API: u32 = 1;
const API_EXIT: u32 = 1;

/// `CUpti_CallbackData` (ref: `cupti_callbacks.h`).
#[repr(C)]
struct CallbackData {
    callback_site: u32,
    function_name: *const c_char,
    function_params: *const c_void,
    function_return_value: *mut c_void,
    symbol_name: *const c_char,
    context: *mut c_void,
    context_uid: u32,
    correlation_data: *mut u64,
    correlation_id: u32,
}

type Callback = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
type Subscribe = unsafe extern "C" fn(*mut *mut c_void, Callback, *mut c_void) -> c_int;
type EnableCallback = unsafe extern "C" fn(u32, *mut c_void, u32, u32) -> c_int;
type Unsubscribe = unsafe extern "C" fn(*mut c_void) -> c_int;
type ResultString = unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int;
type DriverGetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
type CtxGetDevice = unsafe extern "C" fn(*mut c_int) -> c_int;

static CTX_GET_DEVICE: OnceLock<CtxGetDevice> = OnceLock::new();

thread_local! {
    /// The last context (uid) this thread called in and its device.
    static CTX_DEVICE: Cell<(u32, Option<u32>)> = const { Cell::new((u32::MAX, None)) };
}

/// Why tracing did not start.
#[derive(Debug)]
pub struct Off {
    /// The reason sent to `record`.
    pub reason: OffReason,
    /// Details for the one line on stderr.
    pub detail: String,
}

fn off(reason: OffReason, detail: impl Into<String>) -> Off {
    Off {
        reason,
        detail: detail.into(),
    }
}

/// `dlopen`s `name` (a path or soname); with `noload`, only if already loaded.
fn open(name: &Path, noload: bool) -> Option<*mut c_void> {
    let c = CString::new(name.as_os_str().as_encoded_bytes()).ok()?;
    let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | if noload { libc::RTLD_NOLOAD } else { 0 };
    // SAFETY: a NUL-terminated name; dlopen has no other precondition.
    let h = unsafe { libc::dlopen(c.as_ptr(), flags) };
    (!h.is_null()).then_some(h)
}

/// Looks up `name` in `lib` as a function of type `F`.
///
/// # Safety
/// `F` must be the function pointer type of the symbol's C declaration.
unsafe fn sym<F: Copy>(lib: *mut c_void, name: &CStr) -> Option<F> {
    let p = libc::dlsym(lib, name.as_ptr());
    (!p.is_null()).then(|| std::mem::transmute_copy::<*mut c_void, F>(&p))
}

/// The CUDA driver's major version (12, 13, …) from the libcuda already loaded.
fn driver_major() -> Result<u32, Off> {
    let lib = open(Path::new("libcuda.so.1"), true)
        .ok_or_else(|| off(OffReason::UnknownRuntime, "libcuda.so.1 is not loaded"))?;
    // SAFETY: the types follow cuda.h's declarations.
    let (get, dev) = unsafe {
        (
            sym::<DriverGetVersion>(lib, c"cuDriverGetVersion"),
            sym::<CtxGetDevice>(lib, c"cuCtxGetDevice"),
        )
    };
    if let Some(d) = dev {
        let _ = CTX_GET_DEVICE.set(d);
    }
    let get = get.ok_or_else(|| off(OffReason::UnknownRuntime, "no cuDriverGetVersion"))?;
    let mut v: c_int = 0;
    // SAFETY: writes one int.
    let r = unsafe { get(&mut v) };
    match (r, v) {
        (0, v) if v >= 12000 => Ok(v as u32 / 1000),
        _ => Err(off(
            OffReason::UnknownRuntime,
            format!("cuDriverGetVersion returned {r}, version {v}"),
        )),
    }
}

/// The device of the calling thread's current context, cached per context uid.
fn current_device(ctx_uid: u32) -> Option<u32> {
    let (uid, dev) = CTX_DEVICE.with(Cell::get);
    if uid == ctx_uid {
        return dev;
    }
    let get = CTX_GET_DEVICE.get()?;
    let mut d: c_int = -1;
    // SAFETY: writes one int; called from a driver callback, where the context is current.
    let dev = (unsafe { get(&mut d) } == 0)
        .then_some(d)
        .and_then(|d| u32::try_from(d).ok());
    CTX_DEVICE.with(|c| c.set((ctx_uid, dev)));
    dev
}

/// The callback CUPTI calls at entry and exit of each enabled driver call.
unsafe extern "C" fn on_call(_user: *mut c_void, domain: u32, id: u32, data: *const c_void) {
    let _ = std::panic::catch_unwind(|| {
        if domain != DOMAIN_DRIVER_API || data.is_null() {
            return;
        }
        // SAFETY: for the driver-API domain CUPTI passes a CUpti_CallbackData.
        let d = unsafe { &*(data as *const CallbackData) };
        if d.callback_site != API_EXIT {
            return;
        }
        let result = match d.function_return_value.is_null() {
            true => 0,
            // SAFETY: at exit, the CUresult the call returned.
            false => unsafe { *(d.function_return_value as *const c_int) },
        };
        // SAFETY: CUPTI passes the parameter struct of `id`.
        let Some(call) = (unsafe { decode(id, d.function_params, result == 0) }) else {
            return;
        };
        let mut e = stamp(call.api, call.op, Platform::Cuda);
        e.device = match call.place {
            Where::Host => None,
            Where::Device(n) => Some(n),
            Where::Current => current_device(d.context_uid),
        };
        e.bytes = call.bytes;
        e.address = call.address;
        e.flags = call.flags;
        e.result = result;
        emit(&e);
    });
}

/// CUPTI's text for a result code.
fn result_string(lib: *mut c_void, r: c_int) -> String {
    // SAFETY: the type follows cupti_result.h.
    let Some(f) = (unsafe { sym::<ResultString>(lib, c"cuptiGetResultString") }) else {
        return format!("CUPTI error {r}");
    };
    let mut s: *const c_char = std::ptr::null();
    // SAFETY: CUPTI writes a pointer to a static string.
    if unsafe { f(r, &mut s) } != 0 || s.is_null() {
        return format!("CUPTI error {r}");
    }
    // SAFETY: a NUL-terminated static string.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// Opens the first CUPTI of `paths` that loads.
fn open_cupti(paths: &[PathBuf]) -> Option<(*mut c_void, &PathBuf)> {
    paths.iter().find_map(|p| open(p, false).map(|h| (h, p)))
}

/// Finds CUPTI and subscribes to the memory calls; the library used on success.
pub fn start() -> Result<String, Off> {
    let major = driver_major()?;
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let paths = crate::find::candidates(major, &crate::find::homes(), &maps);
    let (lib, path) = open_cupti(&paths)
        .ok_or_else(|| off(OffReason::NoCupti, format!("tried {} places", paths.len())))?;
    // SAFETY: the types follow cupti_callbacks.h.
    let (subscribe, enable, unsubscribe) = unsafe {
        (
            sym::<Subscribe>(lib, c"cuptiSubscribe"),
            sym::<EnableCallback>(lib, c"cuptiEnableCallback"),
            sym::<Unsubscribe>(lib, c"cuptiUnsubscribe"),
        )
    };
    let (Some(subscribe), Some(enable)) = (subscribe, enable) else {
        return Err(off(
            OffReason::NoCupti,
            format!("{} lacks cuptiSubscribe", path.display()),
        ));
    };
    let mut sub: *mut c_void = std::ptr::null_mut();
    // SAFETY: `on_call` has CUpti_CallbackFunc's signature and catches every panic.
    let r = unsafe { subscribe(&mut sub, on_call, std::ptr::null_mut()) };
    if r != 0 {
        return Err(off(OffReason::SubscribeFailed, result_string(lib, r)));
    }
    for id in cbid::ALL {
        // SAFETY: a live subscriber handle.
        let r = unsafe { enable(1, sub, DOMAIN_DRIVER_API, id) };
        if r != 0 {
            if let Some(u) = unsubscribe {
                // SAFETY: the handle just subscribed.
                unsafe { u(sub) };
            }
            let why = format!("callback {id}: {}", result_string(lib, r));
            return Err(off(OffReason::SubscribeFailed, why));
        }
    }
    emit(&stamp(Api::Tracer, Op::Started, Platform::Cuda));
    Ok(path.display().to_string())
}
