"""Medians per condition from overhead.sh's output (stdin): microseconds per traced call
(pooled async and plain alloc/free), per untraced call, resident memory, training steps per
second; each condition against `bare` and the tracer against CUPTI with an empty callback."""
import re
import statistics
import sys
from collections import defaultdict

calls = defaultdict(lambda: defaultdict(list))
for line in sys.stdin:
    m = re.match(r"(\S+): round \d+ async ([\d.]+) alloc ([\d.]+) other ([\d.]+)", line)
    if m:
        for key, v in zip(("async", "alloc", "other"), m.groups()[1:]):
            calls[m[1]][key].append(float(v))
    m = re.match(r"(\S+): rss KiB total (\d+) cupti (\d+) tracer (\d+)", line)
    if m:
        for key, v in zip(("rss", "cupti_lib", "tracer_lib"), m.groups()[1:]):
            calls[m[1]][key].append(int(v))
    m = re.match(r"(\S+): train \d+ steps [\d.]+ s = ([\d.]+) steps/s rss (\d+)", line)
    if m:
        calls[m[1]]["steps/s"].append(float(m[2]))
        calls[m[1]]["train_rss"].append(int(m[3]))

med = {c: {k: statistics.median(v) for k, v in d.items()} for c, d in calls.items()}
for c, d in med.items():
    print(c, " ".join(f"{k}={v:g}" for k, v in d.items()), f"(n={len(calls[c]['async'])})")
bare = med.get("bare", {})
for c in ("cupti-empty", "traced", "untraced"):
    for k in ("async", "alloc"):
        if k in med.get(c, {}) and k in bare:
            print(f"{c} - bare, {k}: {med[c][k] - bare[k]:+.3f} us/call")
for k in ("async", "alloc"):
    if k in med.get("traced", {}) and k in med.get("cupti-empty", {}):
        print(f"tracer's own work (traced - cupti-empty), {k}: "
              f"{med['traced'][k] - med['cupti-empty'][k]:+.3f} us/call")
for c in ("cupti-empty", "traced"):
    if "rss" in med.get(c, {}) and "rss" in bare:
        print(f"{c} rss - bare: {(med[c]['rss'] - bare['rss']) / 1024:+.1f} MiB")
if "steps/s" in med.get("traced", {}) and "steps/s" in bare:
    print(f"training: traced {med['traced']['steps/s']:.2f} vs bare {bare['steps/s']:.2f} steps/s "
          f"= {(med['traced']['steps/s'] / bare['steps/s'] - 1) * 100:+.2f} %")
