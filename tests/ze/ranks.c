/* compute-runtime#953 in miniature: one context over two devices; two ranks (forked processes),
 * rank r allocates (r + 1) GiB on device r, makes it resident on its own device and then on its
 * peer's, and allocates and frees 64 MiB of host memory. Exits non-zero when a call fails. */
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(call) do { ze_result_t r_ = (call); if (r_ != ZE_RESULT_SUCCESS) { \
    fprintf(stderr, "%s failed: 0x%x\n", #call, (unsigned)r_); exit(1); } } while (0)

static int rank(int r, ze_context_handle_t ctx, ze_device_handle_t *dev) {
    size_t size = (size_t)(r + 1) << 30;
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
    void *p = NULL, *h = NULL;
    CHECK(zeMemAllocDevice(ctx, &dd, size, 4096, dev[r], &p));
    CHECK(zeContextMakeMemoryResident(ctx, dev[r], p, size));
    CHECK(zeContextMakeMemoryResident(ctx, dev[1 - r], p, size));
    CHECK(zeMemAllocHost(ctx, &hd, 64 << 20, 4096, &h));
    CHECK(zeMemFree(ctx, h));
    printf("rank %d: %zu bytes on device %d resident on device %d\n", r, size, r, 1 - r);
    return 0;
}

int main(void) {
    ze_driver_handle_t drv;
    ze_device_handle_t dev[2];
    ze_context_handle_t ctx;
    uint32_t n = 1, nd = 2;
    CHECK(zeInit(0));
    CHECK(zeDriverGet(&n, &drv));
    CHECK(zeDeviceGet(drv, &nd, dev));
    if (nd != 2) { fprintf(stderr, "expected 2 devices, got %u\n", nd); return 1; }
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    CHECK(zeContextCreate(drv, &cd, &ctx));
    fflush(stdout);
    for (int r = 0; r < 2; r++) {
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) exit(rank(r, ctx, dev));
    }
    int ok = 1, status;
    while (wait(&status) > 0) ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return ok ? 0 : 1;
}
