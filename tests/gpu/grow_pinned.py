#!/usr/bin/env python3
"""Pins 1 GiB of host memory every STEP seconds (default 1.5), COUNT times (default 40), keeping
every block, with torch.empty(2**30, dtype=torch.uint8).pin_memory() (cudaHostAlloc through
PyTorch's caching host allocator: a shared /dev/zero mapping, NVIDIA `pinned-shmem` in gpuledger).
Prints `PINNED <n> GiB t=<unix time>` after each block, so a guard run shows how far the job got.
Usage: grow_pinned.py [COUNT] [STEP]. Not run by CI."""
import os, sys, time
import torch

count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
step = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
print(f"START pid={os.getpid()} t={time.time():.3f}", flush=True)
held = []
for n in range(1, count + 1):
    time.sleep(step)
    held.append(torch.empty(2**30, dtype=torch.uint8).pin_memory())
    print(f"PINNED {n} GiB t={time.time():.3f}", flush=True)
print(f"DONE pinned={len(held)} GiB", flush=True)
time.sleep(5)
