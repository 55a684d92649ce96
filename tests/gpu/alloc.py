#!/usr/bin/env python3
"""Allocates 8 GiB on the GPU and 4 GiB of pinned host memory (cudaHostAlloc through
pin_memory=True), then sleeps. With --wait-baseline it first creates the CUDA context, prints
BASELINE and waits for /tmp/gpuledger-go-<pid>, so the context's own memory can be measured
apart from the allocations. Not run by CI."""
import os, sys, time
import torch

args = [a for a in sys.argv[1:] if not a.startswith("--")]
seconds = float(args[0]) if args else 30
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
if "--wait-baseline" in sys.argv:
    print(f"BASELINE pid={os.getpid()}", flush=True)
    while not os.path.exists(f"/tmp/gpuledger-go-{os.getpid()}"):
        time.sleep(0.05)
free0, total = torch.cuda.mem_get_info()
dev = torch.empty(8 * 2**30 // 4, dtype=torch.float32, device="cuda")
dev.fill_(1.0)
host = torch.empty(4 * 2**30 // 4, dtype=torch.float32, pin_memory=True)
host.fill_(1.0)
torch.cuda.synchronize()
free1, _ = torch.cuda.mem_get_info()
print(f"READY pid={os.getpid()} reserved={torch.cuda.memory_reserved()} "
      f"device_used_by_process={free0 - free1} pinned={host.numel() * 4}", flush=True)
time.sleep(seconds)
