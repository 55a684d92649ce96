//! Turning a CUPTI driver-API callback (its id and parameter struct, at API exit) into a call.
//!
//! ref: CUDA 13.0 `include/cupti_driver_cbid.h` (callback ids) and
//! `include/generated_cuda_meta.h` (the `cuMem*_params` structs), as shipped with the toolkit;
//! the structs below declare the leading fields this tracer reads, in the same order and types.

use gpuledger_trace_wire::{Api, Op};
use std::ffi::c_void;

/// Callback ids (`CUpti_driver_api_trace_cbid`) of the memory calls traced.
pub mod cbid {
    /// `cuMemFreeHost`.
    pub const MEM_FREE_HOST: u32 = 38;
    /// `cuMemHostAlloc`.
    pub const MEM_HOST_ALLOC: u32 = 39;
    /// `cuMemAlloc_v2`.
    pub const MEM_ALLOC_V2: u32 = 243;
    /// `cuMemFree_v2`.
    pub const MEM_FREE_V2: u32 = 245;
    /// `cuMemAllocHost_v2`.
    pub const MEM_ALLOC_HOST_V2: u32 = 294;
    /// `cuMemHostUnregister`.
    pub const MEM_HOST_UNREGISTER: u32 = 302;
    /// `cuMemAllocManaged`.
    pub const MEM_ALLOC_MANAGED: u32 = 371;
    /// `cuMemHostRegister_v2`.
    pub const MEM_HOST_REGISTER_V2: u32 = 379;
    /// `cuMemCreate`.
    pub const MEM_CREATE: u32 = 549;
    /// `cuMemRelease`.
    pub const MEM_RELEASE: u32 = 550;
    /// `cuMemMap`.
    pub const MEM_MAP: u32 = 551;
    /// `cuMemUnmap`.
    pub const MEM_UNMAP: u32 = 552;
    /// `cuMemAllocAsync`.
    pub const MEM_ALLOC_ASYNC: u32 = 598;
    /// `cuMemAllocAsync_ptsz`.
    pub const MEM_ALLOC_ASYNC_PTSZ: u32 = 599;
    /// `cuMemFreeAsync`.
    pub const MEM_FREE_ASYNC: u32 = 600;
    /// `cuMemFreeAsync_ptsz`.
    pub const MEM_FREE_ASYNC_PTSZ: u32 = 601;
    /// `cuMemAllocFromPoolAsync`.
    pub const MEM_ALLOC_FROM_POOL_ASYNC: u32 = 611;
    /// `cuMemAllocFromPoolAsync_ptsz`.
    pub const MEM_ALLOC_FROM_POOL_ASYNC_PTSZ: u32 = 612;

    /// Every id the tracer subscribes to.
    pub const ALL: [u32; 18] = [
        MEM_FREE_HOST,
        MEM_HOST_ALLOC,
        MEM_ALLOC_V2,
        MEM_FREE_V2,
        MEM_ALLOC_HOST_V2,
        MEM_HOST_UNREGISTER,
        MEM_ALLOC_MANAGED,
        MEM_HOST_REGISTER_V2,
        MEM_CREATE,
        MEM_RELEASE,
        MEM_MAP,
        MEM_UNMAP,
        MEM_ALLOC_ASYNC,
        MEM_ALLOC_ASYNC_PTSZ,
        MEM_FREE_ASYNC,
        MEM_FREE_ASYNC_PTSZ,
        MEM_ALLOC_FROM_POOL_ASYNC,
        MEM_ALLOC_FROM_POOL_ASYNC_PTSZ,
    ];
}

/// `cuMemAlloc_v2_params`, and the leading fields of `cuMemAllocAsync_params` and
/// `cuMemAllocFromPoolAsync_params` (`CUdeviceptr *dptr; size_t bytesize; …`).
#[repr(C)]
pub struct AllocParams {
    /// Where the driver writes the address.
    pub dptr: *mut u64,
    /// Bytes asked for.
    pub bytesize: usize,
}

/// `cuMemFree_v2_params`, and the leading field of `cuMemFreeAsync_params`.
#[repr(C)]
pub struct FreeParams {
    /// The address freed.
    pub dptr: u64,
}

/// `cuMemHostAlloc_params` (`void **pp; size_t bytesize; unsigned int Flags;`); also
/// `cuMemHostRegister_v2_params` with `p` in place of `pp`, read through [`RegisterParams`].
#[repr(C)]
pub struct HostAllocParams {
    /// Where the driver writes the address.
    pub pp: *mut *mut c_void,
    /// Bytes asked for.
    pub bytesize: usize,
    /// `CU_MEMHOSTALLOC_*`.
    pub flags: u32,
}

/// `cuMemAllocHost_v2_params` (`void **pp; size_t bytesize;`).
#[repr(C)]
pub struct AllocHostParams {
    /// Where the driver writes the address.
    pub pp: *mut *mut c_void,
    /// Bytes asked for.
    pub bytesize: usize,
}

/// `cuMemFreeHost_params` and `cuMemHostUnregister_params` (`void *p;`).
#[repr(C)]
pub struct HostPtrParams {
    /// The address.
    pub p: *mut c_void,
}

/// `cuMemHostRegister_v2_params` (`void *p; size_t bytesize; unsigned int Flags;`).
#[repr(C)]
pub struct RegisterParams {
    /// The pages' start.
    pub p: *mut c_void,
    /// Bytes pinned.
    pub bytesize: usize,
    /// `CU_MEMHOSTREGISTER_*`.
    pub flags: u32,
}

/// `cuMemAllocManaged_params` (`CUdeviceptr *dptr; size_t bytesize; unsigned int flags;`).
#[repr(C)]
pub struct ManagedParams {
    /// Where the driver writes the address.
    pub dptr: *mut u64,
    /// Bytes asked for.
    pub bytesize: usize,
    /// `CU_MEM_ATTACH_*`.
    pub flags: u32,
}

/// The leading fields of `CUmemAllocationProp` (`type; requestedHandleTypes; CUmemLocation
/// location {type; id}`), ref: CUDA 13.0 `include/cuda.h`.
#[repr(C)]
pub struct AllocationProp {
    /// `CUmemAllocationType`.
    pub kind: u32,
    /// `CUmemAllocationHandleType`.
    pub handle_types: u32,
    /// `CUmemLocationType`: 1 device, 2–4 host.
    pub location_type: u32,
    /// The device ordinal for a device location.
    pub location_id: i32,
}

/// `CU_MEM_LOCATION_TYPE_DEVICE`.
const LOCATION_DEVICE: u32 = 1;

/// `cuMemCreate_params` (`CUmemGenericAllocationHandle *handle; size_t size; const
/// CUmemAllocationProp *prop; unsigned long long flags;`).
#[repr(C)]
pub struct CreateParams {
    /// Where the driver writes the handle.
    pub handle: *mut u64,
    /// Bytes of physical memory.
    pub size: usize,
    /// Where it lives.
    pub prop: *const AllocationProp,
    /// Flags (0 today).
    pub flags: u64,
}

/// `cuMemRelease_params` (`CUmemGenericAllocationHandle handle;`).
#[repr(C)]
pub struct ReleaseParams {
    /// The handle released.
    pub handle: u64,
}

/// `cuMemMap_params` (`CUdeviceptr ptr; size_t size; size_t offset; handle; flags`).
#[repr(C)]
pub struct MapParams {
    /// Start of the range.
    pub ptr: u64,
    /// Its size.
    pub size: usize,
    /// Offset into the handle.
    pub offset: usize,
    /// The physical handle.
    pub handle: u64,
    /// Flags (0 today).
    pub flags: u64,
}

/// `cuMemUnmap_params` (`CUdeviceptr ptr; size_t size;`).
#[repr(C)]
pub struct UnmapParams {
    /// Start of the range.
    pub ptr: u64,
    /// Its size.
    pub size: usize,
}

/// Which device a call's memory is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// Host memory.
    Host,
    /// The device of the calling thread's current context.
    Current,
    /// This device ordinal.
    Device(u32),
}

/// One decoded call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// Memory kind.
    pub api: Api,
    /// What it did.
    pub op: Op,
    /// Where the memory is.
    pub place: Where,
    /// Bytes (0 where the call does not say).
    pub bytes: u64,
    /// Address or handle (0 for a failed allocation).
    pub address: u64,
    /// Flags.
    pub flags: u32,
}

/// Reads `*p` as an address when the call succeeded and `p` is not null.
///
/// # Safety
/// `p` is null or valid for reads.
unsafe fn out(p: *const u64, ok: bool) -> u64 {
    if ok && !p.is_null() {
        *p
    } else {
        0
    }
}

/// Decodes the call `cbid` from its parameter struct, at API exit; `ok` when it returned success
/// (only then are its output pointers read). `None` for an id not traced or null parameters.
///
/// # Safety
/// `params` is null or points to the parameter struct of `cbid` as CUPTI passes it
/// (`CUpti_CallbackData::functionParams`), with its pointers valid as the driver left them.
pub unsafe fn decode(cbid: u32, params: *const c_void, ok: bool) -> Option<Call> {
    use cbid::*;
    if params.is_null() {
        return None;
    }
    let call = |api, op, place, bytes, address, flags| Call {
        api,
        op,
        place,
        bytes,
        address,
        flags,
    };
    Some(match cbid {
        MEM_ALLOC_V2
        | MEM_ALLOC_ASYNC
        | MEM_ALLOC_ASYNC_PTSZ
        | MEM_ALLOC_FROM_POOL_ASYNC
        | MEM_ALLOC_FROM_POOL_ASYNC_PTSZ => {
            let p = &*(params as *const AllocParams);
            let api = if cbid == MEM_ALLOC_V2 {
                Api::Device
            } else {
                Api::Pooled
            };
            call(
                api,
                Op::Alloc,
                Where::Current,
                p.bytesize as u64,
                out(p.dptr, ok),
                0,
            )
        }
        MEM_FREE_V2 | MEM_FREE_ASYNC | MEM_FREE_ASYNC_PTSZ => {
            let p = &*(params as *const FreeParams);
            let api = if cbid == MEM_FREE_V2 {
                Api::Device
            } else {
                Api::Pooled
            };
            call(api, Op::Free, Where::Current, 0, p.dptr, 0)
        }
        MEM_HOST_ALLOC => {
            let p = &*(params as *const HostAllocParams);
            let addr = out(p.pp as *const u64, ok);
            call(
                Api::HostPinned,
                Op::Alloc,
                Where::Host,
                p.bytesize as u64,
                addr,
                p.flags,
            )
        }
        MEM_ALLOC_HOST_V2 => {
            let p = &*(params as *const AllocHostParams);
            let addr = out(p.pp as *const u64, ok);
            call(
                Api::HostPinned,
                Op::Alloc,
                Where::Host,
                p.bytesize as u64,
                addr,
                0,
            )
        }
        MEM_FREE_HOST | MEM_HOST_UNREGISTER => {
            let p = &*(params as *const HostPtrParams);
            let api = if cbid == MEM_FREE_HOST {
                Api::HostPinned
            } else {
                Api::Registered
            };
            call(api, Op::Free, Where::Host, 0, p.p as u64, 0)
        }
        MEM_HOST_REGISTER_V2 => {
            let p = &*(params as *const RegisterParams);
            call(
                Api::Registered,
                Op::Alloc,
                Where::Host,
                p.bytesize as u64,
                p.p as u64,
                p.flags,
            )
        }
        MEM_ALLOC_MANAGED => {
            let p = &*(params as *const ManagedParams);
            call(
                Api::Managed,
                Op::Alloc,
                Where::Current,
                p.bytesize as u64,
                out(p.dptr, ok),
                p.flags,
            )
        }
        MEM_CREATE => {
            let p = &*(params as *const CreateParams);
            let place = match p.prop.as_ref() {
                Some(pr) if pr.location_type == LOCATION_DEVICE => {
                    u32::try_from(pr.location_id).map_or(Where::Current, Where::Device)
                }
                Some(_) => Where::Host,
                None => Where::Current,
            };
            call(
                Api::Vmm,
                Op::Alloc,
                place,
                p.size as u64,
                out(p.handle, ok),
                p.flags as u32,
            )
        }
        MEM_RELEASE => {
            let p = &*(params as *const ReleaseParams);
            call(Api::Vmm, Op::Free, Where::Current, 0, p.handle, 0)
        }
        MEM_MAP => {
            let p = &*(params as *const MapParams);
            call(
                Api::Vmm,
                Op::Map,
                Where::Current,
                p.size as u64,
                p.ptr,
                p.flags as u32,
            )
        }
        MEM_UNMAP => {
            let p = &*(params as *const UnmapParams);
            call(Api::Vmm, Op::Unmap, Where::Current, p.size as u64, p.ptr, 0)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
