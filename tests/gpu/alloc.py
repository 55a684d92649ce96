#!/usr/bin/env python3
"""Allocates 8 GiB on the GPU and 4 GiB of pinned host memory (cudaHostAlloc through
pin_memory=True), prints READY with the numbers, then sleeps. Not run by CI."""
import os, sys, time
import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
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
