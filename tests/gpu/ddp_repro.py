#!/usr/bin/env python3
"""gtt_repro.py's shape on NVIDIA: each rank holds 8 x 1 GiB device segments, runs 50 all_reduce
of a 25M-element bucket, reports torch.cuda.memory_reserved and sleeps. One GPU per rank where
there are enough GPUs (NCCL), else every rank on GPU 0 with the gloo backend. Not run by CI.
    torchrun --standalone --nproc-per-node=2 tests/gpu/ddp_repro.py [SLEEP_S]"""
import os, sys, time
import torch
import torch.distributed as dist

rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
world = int(os.environ["WORLD_SIZE"])
enough = torch.cuda.device_count() >= world
dev = torch.device(f"cuda:{local if enough else 0}")
torch.cuda.set_device(dev)
dist.init_process_group("nccl" if enough else "gloo")
held = [torch.empty(1024**3 // 4, dtype=torch.float32, device=dev) for _ in range(8)]
bucket = torch.ones(25_000_000, device=dev)
for _ in range(50):
    dist.all_reduce(bucket)
torch.cuda.synchronize(dev)
print(f"rank {rank} pid {os.getpid()} device {dev} backend {dist.get_backend()} "
      f"reserved {torch.cuda.memory_reserved(dev)}", flush=True)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 10)
dist.barrier()
dist.destroy_process_group()
