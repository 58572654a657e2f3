#!/usr/bin/python3
"""Per-round ratios of alternate.sh's output, and their medians over all files given.

Usage: ratios.py LOG...  For each round and build: server QPS / in-process QPS
(wall clock, which favours the server when other processes take a core: the
2-thread batch waits for its slower thread), and per core: in-process CPU per
query / the server's (what the server spends beyond the batch)."""
import re, sys, statistics as st

pooled = {"before": [], "after": []}
for f in sys.argv[1:]:
    cur, rows = None, {}
    for l in open(f):
        m = re.match(r"### round (\d+) (\w+) (\S+)", l)
        if m:
            cur = (int(m.group(1)), m.group(2))
            rows[cur] = {"load": m.group(3)}
            continue
        if l.startswith("| ") and cur:
            c = [x.strip() for x in l.strip().strip("|").split("|")]
            if len(c) < 8 or not c[0].isdigit():
                continue
            rows[cur]["srv" if "server" in c[1] else "inp"] = (int(c[6]), int(c[7].split()[0]))
    print(f)
    for k in sorted(rows):
        r = rows[k]
        if "srv" not in r or "inp" not in r:
            continue
        q, cpu = r["srv"][0] / r["inp"][0], r["inp"][1] / r["srv"][1]
        pooled[k[1]].append((q, cpu, r["srv"][1], r["inp"][1]))
        print(f"  round {k[0]} {k[1]:6} load {r['load']:>5}: server {r['srv'][0]:5} QPS {r['srv'][1]} µs/q, "
              f"in process {r['inp'][0]:5} QPS {r['inp'][1]} µs/q; QPS ratio {q:.2f}, per core {cpu:.2f}")
for b, v in pooled.items():
    if v:
        print(f"{b}: {len(v)} rounds; QPS ratio median {st.median(x[0] for x in v):.2f} "
              f"({min(x[0] for x in v):.2f}-{max(x[0] for x in v):.2f}); per core median "
              f"{st.median(x[1] for x in v):.2f} ({min(x[1] for x in v):.2f}-{max(x[1] for x in v):.2f}); "
              f"server µs/q median {st.median(x[2] for x in v)}, in process {st.median(x[3] for x in v)}")
