"""The API-tracing proof job (device machine, not CI), run under `gpuledger record`.

Modes:
  all        1 GiB device memory (caching allocator), 512 MiB pin_memory, 2 GiB of existing
             host pages registered with cudaHostRegister, 256 MiB managed memory, then a child
             process with expandable segments (1 GiB through cuMemCreate/cuMemMap); holds 3 s.
  expandable the child: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, 1 GiB.
  bench      200 matmuls of 4096x4096 (fp32), timed after a warm-up; prints VmRSS.
  calls      20,000 cudaMalloc/cudaFree pairs of 4 KiB (the caching allocator off), timed.
  register   only registers memory: 512 MiB of existing host pages with cudaHostRegister every
             second, up to 4 GiB (for `guard --max-job-host-gpu 1GiB`, which must stop it).
Each phase is written to $GPULEDGER_MARKERS, so the recording's markers show where it was.
"""
import ctypes
import os
import subprocess
import sys
import time

import torch

GIB = 1 << 30


def mark(text):
    print(f"phase: {text}", flush=True)
    markers = os.environ.get("GPULEDGER_MARKERS")
    if markers:
        with open(markers, "a") as f:
            f.write(text + "\n")


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def cudart():
    # The runtime torch already loaded (from its nvidia/cu13 wheel); dlopen finds the same one.
    return ctypes.CDLL("libcudart.so.13")


def all_phases():
    mark("device 1 GiB")
    dev = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    dev.fill_(1)
    mark("pin_memory 512 MiB")
    pinned = torch.empty(GIB // 2, dtype=torch.uint8).pin_memory()
    mark("cudaHostRegister 2 GiB")
    host = torch.ones(2 * GIB, dtype=torch.uint8)
    rt = torch.cuda.cudart()
    err = rt.cudaHostRegister(host.data_ptr(), host.numel(), 0)
    print(f"cudaHostRegister returned {err}", flush=True)
    mark("managed 256 MiB")
    ptr = ctypes.c_void_p()
    err = cudart().cudaMallocManaged(ctypes.byref(ptr), ctypes.c_size_t(GIB // 4), 1)
    print(f"cudaMallocManaged returned {err}", flush=True)
    mark("expandable segments child")
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    subprocess.run([sys.executable, __file__, "expandable"], env=env, check=True)
    mark("holding")
    torch.cuda.synchronize()
    time.sleep(3)
    mark("releasing")
    rt.cudaHostUnregister(host.data_ptr())
    cudart().cudaFree(ptr)
    del dev, pinned
    torch.cuda.empty_cache()
    time.sleep(1)


def expandable():
    x = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    x.fill_(2)
    torch.cuda.synchronize()
    time.sleep(2)
    print(f"expandable child pid {os.getpid()} done", flush=True)


def bench():
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            c = a @ b
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    del c
    print(f"bench 200 matmuls best {min(times):.4f} s median {sorted(times)[2]:.4f} s "
          f"rss {rss_kib()} KiB", flush=True)


def calls():
    rt = cudart()
    ptr = ctypes.c_void_p()
    rt.cudaFree(None)
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(4096))
        rt.cudaFree(ptr)
    dt = time.perf_counter() - t0
    print(f"calls {2 * n} malloc+free {dt:.4f} s = {dt / (2 * n) * 1e6:.3f} us/call", flush=True)


def register():
    rt = torch.cuda.cudart()
    held = []
    for i in range(1, 9):
        host = torch.ones(GIB // 2, dtype=torch.uint8)
        err = rt.cudaHostRegister(host.data_ptr(), host.numel(), 0)
        held.append(host)
        print(f"REGISTERED {i * 512} MiB err={err} t={time.time():.3f}", flush=True)
        time.sleep(1)
    print("NOT STOPPED", flush=True)


if __name__ == "__main__":
    torch.cuda.init()
    {"all": all_phases, "expandable": expandable, "bench": bench, "calls": calls,
     "register": register}[sys.argv[1]]()
