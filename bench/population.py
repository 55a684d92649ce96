#!/usr/bin/env python3
"""Spawns N sleeping processes holding M open fds each (on /dev/null, so `fuser -v /dev/null`
has work to do), prints READY, and tears them down on SIGTERM/SIGINT or stdin EOF."""
import os, signal, sys, time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
m = int(sys.argv[2]) if len(sys.argv) > 2 else 100
extra = sys.argv[3] if len(sys.argv) > 3 else None  # a path some children also keep open

import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, m + 64), max(hard, m + 64)))

kids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(m)]
        if extra and i % 100 == 0:
            fds.append(os.open(extra, os.O_RDONLY))
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            time.sleep(3600)
    kids.append(pid)


def stop(*_):
    for k in kids:
        try:
            os.kill(k, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for k in kids:
        try:
            os.waitpid(k, 0)
        except ChildProcessError:
            pass
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
print("READY", flush=True)
sys.stdin.read()
stop()
