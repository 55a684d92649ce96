use super::cbid::*;
use super::*;
use std::ptr;

fn dec<T>(cbid: u32, p: &T, ok: bool) -> Option<Call> {
    // SAFETY: each test passes the parameter struct of its id.
    unsafe { decode(cbid, p as *const T as *const c_void, ok) }
}

#[test]
fn device_alloc_reads_the_address_only_on_success() {
    let mut addr = 0x7f00_0000_1000u64;
    let p = AllocParams {
        dptr: &mut addr,
        bytesize: 1 << 30,
    };
    let c = dec(MEM_ALLOC_V2, &p, true).unwrap();
    assert_eq!(
        (c.api, c.op, c.place),
        (Api::Device, Op::Alloc, Where::Current)
    );
    assert_eq!((c.bytes, c.address), (1 << 30, 0x7f00_0000_1000));
    assert_eq!(dec(MEM_ALLOC_V2, &p, false).unwrap().address, 0);
    let null = AllocParams {
        dptr: ptr::null_mut(),
        bytesize: 8,
    };
    assert_eq!(dec(MEM_ALLOC_V2, &null, true).unwrap().address, 0);
}

#[test]
fn pooled_alloc_and_free() {
    // cuMemAllocFromPoolAsync_params: dptr, bytesize, pool, stream; the prefix is what is read.
    #[repr(C)]
    struct FromPool {
        head: AllocParams,
        pool: *mut c_void,
        stream: *mut c_void,
    }
    let mut addr = 77u64;
    let p = FromPool {
        head: AllocParams {
            dptr: &mut addr,
            bytesize: 4096,
        },
        pool: ptr::null_mut(),
        stream: ptr::null_mut(),
    };
    let c = dec(MEM_ALLOC_FROM_POOL_ASYNC, &p, true).unwrap();
    assert_eq!((c.api, c.bytes, c.address), (Api::Pooled, 4096, 77));
    let f = dec(MEM_FREE_ASYNC, &FreeParams { dptr: 77 }, true).unwrap();
    assert_eq!((f.api, f.op, f.address), (Api::Pooled, Op::Free, 77));
}

#[test]
fn host_alloc_register_and_their_frees() {
    let mut host: *mut c_void = 0x5000 as *mut c_void;
    let p = HostAllocParams {
        pp: &mut host,
        bytesize: 2 << 20,
        flags: 1,
    };
    let c = dec(MEM_HOST_ALLOC, &p, true).unwrap();
    assert_eq!(
        (c.api, c.place, c.bytes, c.address, c.flags),
        (Api::HostPinned, Where::Host, 2 << 20, 0x5000, 1)
    );
    let r = RegisterParams {
        p: 0x9000 as *mut c_void,
        bytesize: 2 << 30,
        flags: 0,
    };
    let c = dec(MEM_HOST_REGISTER_V2, &r, true).unwrap();
    assert_eq!(
        (c.api, c.op, c.bytes, c.address),
        (Api::Registered, Op::Alloc, 2 << 30, 0x9000)
    );
    // A failed register still names the range it was asked for.
    assert_eq!(
        dec(MEM_HOST_REGISTER_V2, &r, false).unwrap().address,
        0x9000
    );
    let u = dec(
        MEM_HOST_UNREGISTER,
        &HostPtrParams {
            p: 0x9000 as *mut c_void,
        },
        true,
    )
    .unwrap();
    assert_eq!(
        (u.api, u.op, u.address),
        (Api::Registered, Op::Free, 0x9000)
    );
    let f = dec(
        MEM_FREE_HOST,
        &HostPtrParams {
            p: 0x5000 as *mut c_void,
        },
        true,
    )
    .unwrap();
    assert_eq!((f.api, f.op), (Api::HostPinned, Op::Free));
    let mut h2: *mut c_void = 0x6000 as *mut c_void;
    let a = dec(
        MEM_ALLOC_HOST_V2,
        &AllocHostParams {
            pp: &mut h2,
            bytesize: 10,
        },
        true,
    )
    .unwrap();
    assert_eq!((a.api, a.address, a.flags), (Api::HostPinned, 0x6000, 0));
}

#[test]
fn managed_and_vmm() {
    let mut addr = 1u64;
    let m = ManagedParams {
        dptr: &mut addr,
        bytesize: 3,
        flags: 1,
    };
    assert_eq!(dec(MEM_ALLOC_MANAGED, &m, true).unwrap().api, Api::Managed);
    let prop = AllocationProp {
        kind: 1,
        handle_types: 0,
        location_type: 1,
        location_id: 3,
    };
    let mut handle = 0xabcu64;
    let c = CreateParams {
        handle: &mut handle,
        size: 2 << 20,
        prop: &prop,
        flags: 0,
    };
    let got = dec(MEM_CREATE, &c, true).unwrap();
    assert_eq!(
        (got.api, got.place, got.address),
        (Api::Vmm, Where::Device(3), 0xabc)
    );
    let host = AllocationProp {
        location_type: 2,
        ..prop
    };
    let c = CreateParams { prop: &host, ..c };
    assert_eq!(dec(MEM_CREATE, &c, false).unwrap().place, Where::Host);
    let map = MapParams {
        ptr: 0x100,
        size: 2 << 20,
        offset: 0,
        handle: 0xabc,
        flags: 0,
    };
    assert_eq!(dec(MEM_MAP, &map, true).unwrap().op, Op::Map);
    assert_eq!(
        dec(
            MEM_UNMAP,
            &UnmapParams {
                ptr: 0x100,
                size: 2 << 20
            },
            true
        )
        .unwrap()
        .op,
        Op::Unmap
    );
    assert_eq!(
        dec(MEM_RELEASE, &ReleaseParams { handle: 0xabc }, true)
            .unwrap()
            .address,
        0xabc
    );
}

#[test]
fn unknown_id_and_null_params_are_ignored() {
    assert_eq!(dec(1, &FreeParams { dptr: 0 }, true), None);
    // SAFETY: null is allowed.
    assert_eq!(unsafe { decode(MEM_ALLOC_V2, ptr::null(), true) }, None);
    assert_eq!(ALL.len(), 18);
}
