#!/usr/bin/python3
"""Per round: each run's best QPS at recall@10 >= 0.90/0.95/0.98/0.99, and each run's ratio to a base run.

Usage: shape_ratios.py [--cpu] DIR BASE NAME...  reads DIR/NAME.ROUND.json (the JSON of `memrl bench
ann`, bench/hnsw/hnsw_ann.py or bench/faiss/faiss_ann.py) for BASE and each NAME, for every ROUND that
BASE has, and prints a Markdown table of the best QPS (and its setting) per round and recall, then
NAME/BASE per round with its min, median and max. --cpu: QPS from CPU time (threads * 1e6 / cpu_us)
instead of the wall clock's. Made for comparing index shapes at 1M (bench/batch/shape1m*/run.sh)."""
import glob
import json
import re
import statistics
import sys

levels = [0.90, 0.95, 0.98, 0.99]
args = sys.argv[1:]
cpu = bool(args) and args[0] == "--cpu"
if cpu:
    args = args[1:]
if len(args) < 3:
    sys.exit(__doc__)
d, base, names = args[0], args[1], args[2:]
runs = [base] + names


def qps(r):
    return r.get("threads", 1) * 1e6 / r["cpu_us"] if cpu else r["qps"]


def best(path, x):
    try:
        rs = [r for r in json.load(open(path)) if r["recall10"] >= x]
    except FileNotFoundError:
        return None
    return max(rs, key=qps) if rs else None


rounds = sorted({re.search(r"\.(\d+)\.json$", p).group(1) for p in glob.glob(f"{d}/{base}.*.json")}, key=int)
print("| round | recall@10 ≥ | " + " | ".join(f"{n} QPS (setting)" for n in runs) + " | "
      + " | ".join(f"{n}/{base}" for n in names) + " |")
print("|---|---|" + "---:|" * (len(runs) + len(names)))
ratios = {}
for rd in rounds:
    for x in levels:
        cells, q = [], {}
        for n in runs:
            r = best(f"{d}/{n}.{rd}.json", x)
            if r is None:
                cells.append("—")
                continue
            q[n] = qps(r)
            s = f"{r['nprobe']}/{r['refine']}" if r.get("engine") != "hnswlib" else f"ef {r['nprobe']}"
            cells.append(f"{q[n]:,.0f} ({s})")
        rr = []
        for n in names:
            if n in q and base in q:
                v = q[n] / q[base]
                ratios.setdefault((n, x), []).append(v)
                rr.append(f"{v:.2f}×")
            else:
                rr.append("—")
        print(f"| {rd} | {x} | " + " | ".join(cells) + " | " + " | ".join(rr) + " |")
print()
for (n, x), vs in sorted(ratios.items(), key=lambda t: (t[0][1], t[0][0])):
    print(f"{n}/{base} at {x}: rounds " + ", ".join(f"{v:.2f}" for v in vs)
          + f"; min {min(vs):.2f} median {statistics.median(vs):.2f} max {max(vs):.2f}")
