#!/usr/bin/python3
"""Per round: each engine's best wall QPS at recall@10 >= 0.90/0.95/0.98/0.99 and memrl's ratios.

Usage: round_ratios.py DIR, DIR holding ENGINE_t2_b2000.ROUND.json for ENGINE in memrl, memrlmap
(the new build with --map-files), memrlmain (the build before), hnsw, faiss (any may be missing).
--cpu: QPS from CPU time (threads * 1e6 / cpu_us) instead of the wall clock's."""
import json, sys, glob, re, statistics
levels = [0.90, 0.95, 0.98, 0.99]
cpu = sys.argv[1] == "--cpu"
d = sys.argv[-1]
def qps(r):
    return r.get("threads", 1) * 1e6 / r["cpu_us"] if cpu else r["qps"]
engines = ["memrl", "memrlmap", "memrlmain", "hnsw", "faiss"]
rounds = sorted({re.search(r"\.(\d+)\.json$", p).group(1) for p in glob.glob(f"{d}/*_t2_b2000.*.json")})
def best(path, x):
    try: rs = [r for r in json.load(open(path)) if r["recall10"] >= x]
    except FileNotFoundError: return None
    return max(rs, key=qps) if rs else None
ratios = {}
print("| round | recall@10 ≥ | " + " | ".join(f"{e} QPS (setting)" for e in engines) + " | memrl/hnsw | memrl/faiss | memrl/main | map/main |")
print("|---|---|" + "---:|" * (len(engines) + 4))
for rd in rounds:
    for x in levels:
        cells, q = [], {}
        for e in engines:
            r = best(f"{d}/{e}_t2_b2000.{rd}.json", x)
            if r is None: cells.append("—"); continue
            q[e] = qps(r)
            s = f"{r['nprobe']}/{r['refine']}" if e != "hnsw" else f"ef {r['nprobe']}"
            cells.append(f"{qps(r):,.0f} ({s})")
        rr = []
        for a, b in [("memrl", "hnsw"), ("memrl", "faiss"), ("memrl", "memrlmain"), ("memrlmap", "memrlmain")]:
            if a in q and b in q:
                v = q[a] / q[b]; ratios.setdefault((a, b, x), []).append(v); rr.append(f"{v:.2f}×")
            else: rr.append("—")
        print(f"| {rd} | {x} | " + " | ".join(cells) + " | " + " | ".join(rr) + " |")
print()
for (a, b, x), vs in sorted(ratios.items(), key=lambda t: (t[0][2], t[0][0], t[0][1])):
    print(f"{a}/{b} at {x}: rounds " + ", ".join(f"{v:.2f}" for v in vs) + f"; min {min(vs):.2f} median {statistics.median(vs):.2f} max {max(vs):.2f}")
