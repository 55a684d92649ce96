"""PyTorch with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set by the caller): device
memory grows 2 GiB a step to 16 GiB, then is freed and the cache emptied. Not run by CI."""
import time, torch

torch.zeros(1, device="cuda")
held = []
for i in range(8):
    held.append(torch.empty(2 << 30, dtype=torch.uint8, device="cuda").fill_(1))
    torch.cuda.synchronize(); time.sleep(0.4)
print(f"held {len(held) * 2} GiB, reserved {torch.cuda.memory_reserved()}", flush=True)
held.clear(); torch.cuda.empty_cache(); time.sleep(1.5)
print(f"after empty_cache reserved {torch.cuda.memory_reserved()}", flush=True)
