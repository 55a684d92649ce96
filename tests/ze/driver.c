/* A Level Zero test driver with two devices and no hardware: allocations get made-up addresses
 * (never touched), and every call is counted. At exit each process appends its counts to the file
 * named in GPULEDGER_TEST_ZE_LOG, one line: "pid alloc_device alloc_host free local_resident
 * peer_resident evict", so a test can tell which calls reached the driver. */
#include <level_zero/ze_ddi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct handle { int ordinal; };
static struct handle driver = {0};
static struct handle devices[2] = {{0}, {1}};
static struct handle context = {0};

#define MAX_ALLOCS 64
static struct { void *ptr; size_t size; int device; } allocs[MAX_ALLOCS];
static int n_allocs;
static int c_alloc_device, c_alloc_host, c_free, c_local, c_peer, c_evict;

static int ordinal_of(ze_device_handle_t d) {
    for (int i = 0; i < 2; i++)
        if ((void *)d == (void *)&devices[i]) return i;
    return -1;
}

static void *remember(size_t size, int device) {
    if (n_allocs == MAX_ALLOCS) return NULL;
    uintptr_t base = device < 0 ? 0x200000000000ULL : 0x100000000000ULL + ((uintptr_t)device << 40);
    void *p = (void *)(base + ((uintptr_t)n_allocs << 33));
    allocs[n_allocs].ptr = p;
    allocs[n_allocs].size = size;
    allocs[n_allocs].device = device;
    n_allocs++;
    return p;
}

static int find(const void *p) {
    for (int i = 0; i < n_allocs; i++)
        if (allocs[i].ptr == p && allocs[i].size) return i;
    return -1;
}

static ze_result_t init(ze_init_flags_t flags) { (void)flags; return ZE_RESULT_SUCCESS; }

static ze_result_t driver_get(uint32_t *count, ze_driver_handle_t *out) {
    if (out && *count >= 1) out[0] = (ze_driver_handle_t)&driver;
    *count = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_api_version(ze_driver_handle_t d, ze_api_version_t *v) {
    (void)d;
    *v = ZE_API_VERSION_1_0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get(ze_driver_handle_t d, uint32_t *count, ze_device_handle_t *out) {
    (void)d;
    if (out)
        for (uint32_t i = 0; i < *count && i < 2; i++) out[i] = (ze_device_handle_t)&devices[i];
    *count = 2;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t context_create(ze_driver_handle_t d, const ze_context_desc_t *desc,
                                  ze_context_handle_t *out) {
    (void)d; (void)desc;
    *out = (ze_context_handle_t)&context;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t context_destroy(ze_context_handle_t c) { (void)c; return ZE_RESULT_SUCCESS; }

static ze_result_t make_resident(ze_context_handle_t c, ze_device_handle_t d, void *p, size_t size) {
    (void)c; (void)size;
    int i = find(p), dev = ordinal_of(d);
    if (i < 0 || dev < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (allocs[i].device == dev) c_local++; else c_peer++;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t evict(ze_context_handle_t c, ze_device_handle_t d, void *p, size_t size) {
    (void)c; (void)d; (void)p; (void)size;
    c_evict++;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t alloc_device(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *desc,
                                size_t size, size_t align, ze_device_handle_t d, void **out) {
    (void)c; (void)desc; (void)align;
    int dev = ordinal_of(d);
    if (dev < 0) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *out = remember(size, dev);
    c_alloc_device++;
    return *out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
}

static ze_result_t alloc_host(ze_context_handle_t c, const ze_host_mem_alloc_desc_t *desc,
                              size_t size, size_t align, void **out) {
    (void)c; (void)desc; (void)align;
    *out = remember(size, -1);
    c_alloc_host++;
    return *out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

static ze_result_t mem_free(ze_context_handle_t c, void *p) {
    (void)c;
    int i = find(p);
    if (i < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    allocs[i].size = 0;
    c_free++;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t alloc_properties(ze_context_handle_t c, const void *p,
                                    ze_memory_allocation_properties_t *props,
                                    ze_device_handle_t *dev) {
    (void)c;
    int i = find(p);
    if (i < 0) {
        props->type = ZE_MEMORY_TYPE_UNKNOWN;
        return ZE_RESULT_SUCCESS;
    }
    props->type = allocs[i].device < 0 ? ZE_MEMORY_TYPE_HOST : ZE_MEMORY_TYPE_DEVICE;
    props->id = (uint64_t)i;
    props->pageSize = 4096;
    if (dev) *dev = allocs[i].device < 0 ? NULL : (ze_device_handle_t)&devices[allocs[i].device];
    return ZE_RESULT_SUCCESS;
}

static ze_result_t address_range(ze_context_handle_t c, const void *p, void **base, size_t *size) {
    (void)c;
    int i = find(p);
    if (i < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (base) *base = allocs[i].ptr;
    if (size) *size = allocs[i].size;
    return ZE_RESULT_SUCCESS;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("GPULEDGER_TEST_ZE_LOG");
    if (!path || !(c_alloc_device + c_alloc_host + c_local + c_peer)) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%d %d %d %d %d %d %d\n", (int)getpid(), c_alloc_device, c_alloc_host, c_free,
            c_local, c_peer, c_evict);
    fclose(f);
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t v, ze_global_dditable_t *t) {
    (void)v;
    t->pfnInit = init;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t v, ze_driver_dditable_t *t) {
    (void)v;
    t->pfnGet = driver_get;
    t->pfnGetApiVersion = driver_api_version;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t v, ze_device_dditable_t *t) {
    (void)v;
    t->pfnGet = device_get;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetContextProcAddrTable(ze_api_version_t v, ze_context_dditable_t *t) {
    (void)v;
    t->pfnCreate = context_create;
    t->pfnDestroy = context_destroy;
    t->pfnMakeMemoryResident = make_resident;
    t->pfnEvictMemory = evict;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetMemProcAddrTable(ze_api_version_t v, ze_mem_dditable_t *t) {
    (void)v;
    t->pfnAllocDevice = alloc_device;
    t->pfnAllocHost = alloc_host;
    t->pfnFree = mem_free;
    t->pfnGetAllocProperties = alloc_properties;
    t->pfnGetAddressRange = address_range;
    return ZE_RESULT_SUCCESS;
}
