#!/usr/bin/python3
"""The paired set's figures (run.sh): per engine and target, the median QPS of every
timed repetition and of each round; memrl over hnswlib (and over the build before, when
run) as the ratio of the medians and as the range of the per-round ratios of medians.

Usage: bench/batch/paired/ratios.py [DIR]"""
import glob, json, os, re, statistics as st, sys
d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
def load(name):
    out = {}
    for p in glob.glob(f"{d}/{name}.*.json"):
        r = int(re.search(r"\.(\d+)\.json$", p).group(1))
        rs = json.load(open(p))
        out[r] = ([x["qps"] for x in rs], {round(x["recall10"], 4) for x in rs})
    return out
for t in ("95", "99"):
    e = {n: load(n + t) for n in ("memrl", "hnsw", "old")}
    print(f"recall target 0.{t}:")
    for n, runs in e.items():
        if not runs:
            continue
        allq = [q for qs, _ in runs.values() for q in qs]
        rec = set().union(*(r for _, r in runs.values()))
        print(f"  {n:6s} recall@10 {sorted(rec)}  median QPS {st.median(allq):,.0f}"
              f"  (rounds' medians {min(st.median(q) for q, _ in runs.values()):,.0f}"
              f"–{max(st.median(q) for q, _ in runs.values()):,.0f}, {len(runs)} rounds × {len(allq)//len(runs)})")
    for a, b in (("memrl", "hnsw"), ("memrl", "old")):
        A, B = e[a], e[b]
        common = sorted(set(A) & set(B))
        if not common:
            continue
        per = [st.median(A[r][0]) / st.median(B[r][0]) for r in common]
        ma = st.median([q for r in common for q in A[r][0]])
        mb = st.median([q for r in common for q in B[r][0]])
        print(f"  {a}/{b}: {ma/mb:.2f} (per round {min(per):.2f}–{max(per):.2f}, median {st.median(per):.2f}:"
              f" {', '.join(f'{x:.2f}' for x in per)})")
