//! The loader's definitions of the interposed calls, found once with `dlsym(RTLD_NEXT)`, and the
//! two questions the interposer asks the loader: a device handle's ordinal (its index among the
//! devices of all drivers, `zeDriverGet` then `zeDeviceGet`) and an allocation's own device
//! (`zeMemGetAllocProperties`).
//!
//! ref: Level Zero 1.8 `include/ze_api.h` (the signatures below, `ze_memory_allocation_properties_t`,
//! `ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES` = 0x17).

use std::ffi::{c_void, CStr};
use std::sync::OnceLock;

/// An opaque Level Zero handle (driver, device, context).
pub type Handle = *mut c_void;
/// `ze_result_t`.
pub type ZeResult = u32;

/// `ZE_RESULT_SUCCESS`.
pub const SUCCESS: ZeResult = 0;
/// `ZE_RESULT_ERROR_UNINITIALIZED`: what a call gets when no loader is behind the interposer.
pub const UNINITIALIZED: ZeResult = 0x7800_0001;

/// `ze_ipc_mem_handle_t` (passed by value).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct IpcHandle {
    data: [u8; 64],
}

/// `ze_memory_allocation_properties_t`.
#[repr(C)]
struct AllocProperties {
    stype: u32,
    p_next: *mut c_void,
    kind: u32,
    id: u64,
    page_size: u64,
}

pub type AllocDevice =
    unsafe extern "C" fn(Handle, *const c_void, usize, usize, Handle, *mut *mut c_void) -> ZeResult;
pub type AllocHost =
    unsafe extern "C" fn(Handle, *const c_void, usize, usize, *mut *mut c_void) -> ZeResult;
pub type AllocShared = unsafe extern "C" fn(
    Handle,
    *const c_void,
    *const c_void,
    usize,
    usize,
    Handle,
    *mut *mut c_void,
) -> ZeResult;
pub type Free = unsafe extern "C" fn(Handle, *mut c_void) -> ZeResult;
pub type Residency = unsafe extern "C" fn(Handle, Handle, *mut c_void, usize) -> ZeResult;
pub type OpenIpc =
    unsafe extern "C" fn(Handle, Handle, IpcHandle, u32, *mut *mut c_void) -> ZeResult;
pub type CloseIpc = unsafe extern "C" fn(Handle, *const c_void) -> ZeResult;
pub type ContextCreate = unsafe extern "C" fn(Handle, *const c_void, *mut Handle) -> ZeResult;
type GetAllocProperties =
    unsafe extern "C" fn(Handle, *const c_void, *mut AllocProperties, *mut Handle) -> ZeResult;
type GetAddressRange =
    unsafe extern "C" fn(Handle, *const c_void, *mut *mut c_void, *mut usize) -> ZeResult;
type DriverGet = unsafe extern "C" fn(*mut u32, *mut Handle) -> ZeResult;
type DeviceGet = unsafe extern "C" fn(Handle, *mut u32, *mut Handle) -> ZeResult;

/// The next definitions (`None`: no loader behind the interposer).
pub struct Next {
    pub alloc_device: Option<AllocDevice>,
    pub alloc_host: Option<AllocHost>,
    pub alloc_shared: Option<AllocShared>,
    pub free: Option<Free>,
    pub make_resident: Option<Residency>,
    pub evict: Option<Residency>,
    pub open_ipc: Option<OpenIpc>,
    pub close_ipc: Option<CloseIpc>,
    pub context_create: Option<ContextCreate>,
    alloc_properties: Option<GetAllocProperties>,
    address_range: Option<GetAddressRange>,
    driver_get: Option<DriverGet>,
    device_get: Option<DeviceGet>,
}

fn sym<F>(name: &CStr) -> Option<F> {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no precondition.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    // SAFETY: each `F` is the C signature ze_api.h gives the symbol of that name, and a function
    // pointer has the size of a data pointer on the platforms Level Zero supports.
    (!p.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// The loader's definitions, resolved at the first call.
pub fn next() -> &'static Next {
    static NEXT: OnceLock<Next> = OnceLock::new();
    NEXT.get_or_init(|| Next {
        alloc_device: sym(c"zeMemAllocDevice"),
        alloc_host: sym(c"zeMemAllocHost"),
        alloc_shared: sym(c"zeMemAllocShared"),
        free: sym(c"zeMemFree"),
        make_resident: sym(c"zeContextMakeMemoryResident"),
        evict: sym(c"zeContextEvictMemory"),
        open_ipc: sym(c"zeMemOpenIpcHandle"),
        close_ipc: sym(c"zeMemCloseIpcHandle"),
        context_create: sym(c"zeContextCreate"),
        alloc_properties: sym(c"zeMemGetAllocProperties"),
        address_range: sym(c"zeMemGetAddressRange"),
        driver_get: sym(c"zeDriverGet"),
        device_get: sym(c"zeDeviceGet"),
    })
}

/// Devices (and drivers) enumerated at most.
const MAX: usize = 64;

/// The root devices of all drivers, in the loader's order (addresses of their handles).
fn devices(n: &Next) -> Vec<usize> {
    let (Some(driver_get), Some(device_get)) = (n.driver_get, n.device_get) else {
        return Vec::new();
    };
    let mut drivers = [std::ptr::null_mut(); MAX];
    let mut count = MAX as u32;
    // SAFETY: count says how many handles the array holds; the loader writes at most that many.
    if unsafe { driver_get(&mut count, drivers.as_mut_ptr()) } != SUCCESS {
        return Vec::new();
    }
    let mut out = Vec::new();
    for &driver in drivers.iter().take((count as usize).min(MAX)) {
        let mut devs = [std::ptr::null_mut(); MAX];
        let mut c = MAX as u32;
        // SAFETY: as above, for this driver's devices.
        if unsafe { device_get(driver, &mut c, devs.as_mut_ptr()) } == SUCCESS {
            out.extend(devs.iter().take((c as usize).min(MAX)).map(|d| *d as usize));
        }
    }
    out
}

/// A root device's ordinal; `None` for a null handle, a sub-device or an unknown one.
pub fn ordinal(dev: Handle) -> Option<u32> {
    static DEVICES: OnceLock<Vec<usize>> = OnceLock::new();
    if dev.is_null() {
        return None;
    }
    // The first call allocates the list; a panic there (out of memory) must not cross into C.
    let all = std::panic::catch_unwind(|| DEVICES.get_or_init(|| devices(next()))).ok()?;
    all.iter()
        .position(|d| *d == dev as usize)
        .map(|i| i as u32)
}

/// The device an allocation lives on (null for host memory or when the loader cannot say).
pub fn owner(ctx: Handle, ptr: *const c_void) -> Handle {
    let Some(get) = next().alloc_properties else {
        return std::ptr::null_mut();
    };
    let mut props = AllocProperties {
        stype: 0x17,
        p_next: std::ptr::null_mut(),
        kind: 0,
        id: 0,
        page_size: 0,
    };
    let mut dev: Handle = std::ptr::null_mut();
    // SAFETY: both out-pointers point at live locals of the types ze_api.h names; the context and
    // pointer are the caller's, passed on as given.
    let r = unsafe { get(ctx, ptr, &mut props, &mut dev) };
    if r == SUCCESS {
        dev
    } else {
        std::ptr::null_mut()
    }
}

/// The size of the allocation `ptr` lies in (0 when the loader cannot say).
pub fn range_size(ctx: Handle, ptr: *const c_void) -> u64 {
    let Some(get) = next().address_range else {
        return 0;
    };
    let mut base: *mut c_void = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: both out-pointers point at live locals; the context and pointer are the caller's.
    match unsafe { get(ctx, ptr, &mut base, &mut size) } {
        SUCCESS => size as u64,
        _ => 0,
    }
}
