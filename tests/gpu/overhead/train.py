"""A training step loop for the tracer's overhead: an 8-layer MLP (4096 wide, bf16 autocast,
AdamW) on random batches; 30 warm-up steps, then STEPS timed steps. Prints steps per second and
the process's VmRSS. Usage: python3 train.py [STEPS]"""
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)


def step():
    x = torch.randn(512, 4096, device="cuda")
    y = torch.randint(0, 1024, (512,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


for _ in range(30):
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    step()
torch.cuda.synchronize()
dt = time.perf_counter() - t0
with open("/proc/self/status") as f:
    rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
print(f"train {steps} steps {dt:.3f} s = {steps / dt:.2f} steps/s rss {rss} KiB", flush=True)
