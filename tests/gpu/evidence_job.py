#!/usr/bin/env python3
"""A job that leaves evidence in its own output: it times 10 matrix-multiply steps on the GPU
("step N 0.123 s/step"), marks its phases through $GPULEDGER_MARKERS when gpuledger sets it,
then asks for more device memory than the GPU has, so PyTorch raises a real CUDA out-of-memory
error and the job dies with a traceback. Usage: evidence_job.py [SIZE] (matrix size, 8192).
Not run by CI."""
import os, sys, time
import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
markers = os.environ.get("GPULEDGER_MARKERS")

def mark(text):
    if markers:
        with open(markers, "a") as f:
            f.write(text + "\n")

a = torch.randn(n, n, device="cuda")
mark("warm-up done")
for step in range(10):
    t0 = time.time()
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
    print(f"step {step} {time.time() - t0:.4f} s/step", flush=True)
mark("allocating too much")
free, total = torch.cuda.mem_get_info()
too_much = torch.empty(2 * total // 4, dtype=torch.float32, device="cuda")
print("unreachable", too_much.shape)
