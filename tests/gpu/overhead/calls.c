/* The tracer's per-call cost, from C (no interpreter between the calls): ROUNDS rounds of
 * N cuMemAllocAsync + cuMemFreeAsync pairs of 4 KiB on a stream (traced calls the driver answers
 * from its pool in about a microsecond, so a tracer's cost shows), N/20 cuMemAlloc + cuMemFree
 * pairs (traced; tens of microseconds each on an H200) and N cuCtxGetDevice calls (not traced),
 * one line per round in microseconds per call; at the end this process's VmRSS and the resident
 * bytes of the CUPTI, tracer and CUDA driver libraries (from /proc/self/smaps).
 * Usage: calls N ROUNDS */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define CHECK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
    fprintf(stderr, "%s failed: %d\n", #x, (int)r_); exit(1); } } while (0)

/* Resident KiB of the mappings whose path contains `name` (0: VmRSS of the whole process). */
static long rss_kib(const char *name) {
    FILE *f = fopen(name ? "/proc/self/smaps" : "/proc/self/status", "r");
    char line[4096];
    long total = 0, kib;
    int in = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!name) {
            if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) total = kib;
            continue;
        }
        if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' '))
            in = strstr(line, name) != NULL;
        else if (in && sscanf(line, "Rss: %ld kB", &kib) == 1)
            total += kib;
    }
    if (f) fclose(f);
    return total;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    CUstream s;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (long i = 0; i < 1000; i++) { CHECK(cuMemAlloc(&p, 4096)); CHECK(cuMemFree(p)); }
    for (long i = 0; i < 1000; i++) { CHECK(cuMemAllocAsync(&p, 4096, s)); CHECK(cuMemFreeAsync(p, s)); }
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (long i = 0; i < n; i++) { CHECK(cuMemAllocAsync(&p, 4096, s)); CHECK(cuMemFreeAsync(p, s)); }
        CHECK(cuStreamSynchronize(s));
        double pooled = (now() - t0) / (2.0 * n) * 1e6;
        t0 = now();
        for (long i = 0; i < n / 20; i++) { CHECK(cuMemAlloc(&p, 4096)); CHECK(cuMemFree(p)); }
        double plain = (now() - t0) / (2.0 * (n / 20)) * 1e6;
        int d;
        t0 = now();
        for (long i = 0; i < n; i++) CHECK(cuCtxGetDevice(&d));
        double other = (now() - t0) / n * 1e6;
        printf("round %d async %.3f alloc %.3f other %.4f us/call\n", r, pooled, plain, other);
    }
    printf("rss KiB total %ld cupti %ld tracer %ld libcuda %ld\n", rss_kib(NULL),
           rss_kib("libcupti"), rss_kib("libgpuledger_tracer"), rss_kib("libcuda"));
    return 0;
}
