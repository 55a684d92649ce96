"""CuPy: 1 GiB from the pinned memory pool, then 1 GiB of plain host memory registered with
cudaHostRegister, and 4 GiB of device memory. Not run by CI."""
import time, numpy as np, cupy as cp

GiB = 1 << 30
pinned = cp.cuda.alloc_pinned_memory(GiB)
view = np.frombuffer(pinned, dtype=np.uint8, count=GiB); view[:] = 1
host = np.ones(GiB, dtype=np.uint8)
cp.cuda.runtime.hostRegister(host.ctypes.data, host.nbytes, 0)
dev = cp.ones(4 * GiB // 4, dtype=cp.float32)
cp.cuda.Device().synchronize()
print("pinned pool 1 GiB, registered 1 GiB, device 4 GiB", flush=True)
time.sleep(3)
cp.cuda.runtime.hostUnregister(host.ctypes.data)
