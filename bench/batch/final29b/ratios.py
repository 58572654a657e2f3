#!/usr/bin/python3
"""Per round, each engine's best QPS at recall@10 >= 0.95 and 0.99 and memrl's ratios,
by wall clock and by CPU time (threads * 1e6 / cpu_us), from run.sh's JSON.

Usage: bench/batch/final29b/ratios.py [DIR]"""
import json, glob, re, sys, os
d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
def best(path, x, cpu):
    try: rs = [r for r in json.load(open(path)) if r["recall10"] >= x]
    except FileNotFoundError: return None
    if not rs: return None
    q = lambda r: r.get("threads", 1) * 1e6 / r["cpu_us"] if cpu else r["qps"]
    return max(q(r) for r in rs)
sets = {"100k": ["memrl", "memrlold", "hnsw", "faiss"],
        "1m": ["memrl", "memrlpq64", "memrlold", "hnsw", "faiss"]}
for size, engines in sets.items():
    rounds = sorted({re.search(r"\.(\d+)\.json$", p).group(1) for p in glob.glob(f"{d}/m{size}_*.json")})
    for cpu in (False, True):
        print(f"\n{size}, {'CPU time' if cpu else 'wall clock'}: best QPS per round, and ratios")
        for x in (0.95, 0.99):
            for rd in rounds:
                q = {e: best(f"{d}/m{size}_{e}.{rd}.json", x, cpu) for e in engines}
                cells = " ".join(f"{e}={v:,.0f}" for e, v in q.items() if v)
                rat = []
                for e in engines:
                    if e.startswith("memrl") and q.get(e) and q.get("hnsw"):
                        rat.append(f"{e}/hnsw={q[e]/q['hnsw']:.2f}")
                    if e.startswith("memrl") and q.get(e) and q.get("faiss"):
                        rat.append(f"{e}/faiss={q[e]/q['faiss']:.1f}")
                if q.get("memrl") and q.get("memrlold"):
                    rat.append(f"memrl/old={q['memrl']/q['memrlold']:.2f}")
                print(f"  >= {x} round {rd}: {cells} | {' '.join(rat)}")
