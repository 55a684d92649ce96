"""PyTorch asks for device memory 16 GiB at a time until torch.cuda.OutOfMemoryError, which it
does not catch (the job fails with it, as real jobs do). Not run by CI."""
import time, torch

held = []
while True:
    held.append(torch.empty(16 << 30, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize(); time.sleep(0.3)
