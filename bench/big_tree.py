#!/usr/bin/env python3
"""Writes a capture tree with N processes for scan-scaling measurements:
    bench/big_tree.py OUT_DIR [PIDS] [GPU_EVERY]
Every process has comm, cmdline, status and four fd links (/dev/null, a pty, a socket, a pipe);
every GPU_EVERY-th also holds /dev/dri/renderD128 with the xe fdinfo of tests/fixtures/xe-two-tile
(whose meminfo and sysfs device the tree reuses). Then, e.g.:
    /usr/bin/time -v target/release/gpuledger --root OUT_DIR --json > /dev/null
"""
import os
import shutil
import sys

out = sys.argv[1]
pids = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
gpu_every = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests/fixtures/xe-two-tile")

shutil.rmtree(out, ignore_errors=True)
shutil.copytree(fixture, out, symlinks=True)
shutil.rmtree(os.path.join(out, "proc/1383"))
with open(os.path.join(fixture, "proc/1383/fdinfo/8")) as f:
    fdinfo = f.read()

for i in range(pids):
    pid = 1000 + i
    d = os.path.join(out, "proc", str(pid))
    os.makedirs(os.path.join(d, "fd"))
    with open(os.path.join(d, "comm"), "w") as f:
        f.write(f"worker{i % 97}\n")
    with open(os.path.join(d, "cmdline"), "w") as f:
        f.write(f"/usr/bin/worker\0--id\0{i}\0" + "x" * 200 + "\0")
    with open(os.path.join(d, "status"), "w") as f:
        f.write(f"Name:\tworker\nPid:\t{pid}\nPPid:\t1\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t{pid}\n")
    for n, target in enumerate(["/dev/null", "/dev/pts/3", f"socket:[{pid}]", f"pipe:[{pid}]"]):
        os.symlink(target, os.path.join(d, "fd", str(n)))
    if i % gpu_every == 0:
        os.symlink("/dev/dri/renderD128", os.path.join(d, "fd", "5"))
        os.makedirs(os.path.join(d, "fdinfo"))
        with open(os.path.join(d, "fdinfo", "5"), "w") as f:
            f.write(fdinfo.replace("drm-client-id:\t173", f"drm-client-id:\t{pid}"))
print(f"{out}: {pids} processes, {(pids + gpu_every - 1) // gpu_every} with a DRM fd")
