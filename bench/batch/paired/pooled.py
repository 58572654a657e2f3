#!/usr/bin/python3
"""Many paired sets (run.sh) side by side: each set's ratio and the machine's state in it,
then every round of every set pooled, and the rounds grouped by how fast hnswlib ran in
them (its CPU a query), which is what moves the ratio on this VM.

Usage: bench/batch/paired/pooled.py TARGET DIR...     (TARGET 95 or 99)

A round's ratio is memrl's median QPS over hnswlib's median QPS in that round (ratios.py's
"per round"); a set's is the ratio of the medians over all its repetitions."""
import glob, json, os, re, statistics as st, sys

if len(sys.argv) < 3 or sys.argv[1] not in ("95", "99"):
    sys.exit(__doc__)
t, dirs = sys.argv[1], sys.argv[2:]
goal = {"95": 2.5, "99": 2.0}[t]


def rounds(d, name):
    out = {}
    for p in glob.glob(f"{d}/{name}{t}.*.json"):
        out[int(re.search(r"\.(\d+)\.json$", p).group(1))] = json.load(open(p))
    return out


def when(d):
    try:
        ls = [l.split() for l in open(f"{d}/loadavg.log")]
        return f"{ls[0][3][:5]}–{ls[-1][1][:5]}", max(float(l[-5]) for l in ls)
    except (OSError, IndexError, ValueError):
        return "?", float("nan")


pool = []  # (set, round ratio, hnswlib CPU µs, memrl CPU µs)
print(f"recall target 0.{t}, memrl over hnswlib (target {goal}×)")
print(f"{'set':28s} {'UTC':11s} {'load≤':>5s} {'ratio':>5s} {'rounds':>13s} {'≥ target':>8s}"
      f" {'hnswlib CPU µs':>14s} {'memrl CPU µs':>12s}")
for d in dirs:
    m, h = rounds(d, "memrl"), rounds(d, "hnsw")
    common = sorted(set(m) & set(h))
    if not common:
        continue
    per = []
    for r in common:
        ratio = st.median(x["qps"] for x in m[r]) / st.median(x["qps"] for x in h[r])
        hc, mc = st.median(x["cpu_us"] for x in h[r]), st.median(x["cpu_us"] for x in m[r])
        per.append(ratio)
        pool.append((d, ratio, hc, mc))
    allr = st.median(x["qps"] for r in common for x in m[r]) / st.median(x["qps"] for r in common for x in h[r])
    hc = st.median(x["cpu_us"] for r in common for x in h[r])
    mc = st.median(x["cpu_us"] for r in common for x in m[r])
    span, load = when(d)
    hit = sum(p >= goal for p in per)
    print(f"{os.path.basename(d.rstrip('/')):28s} {span:11s} {load:5.1f} {allr:5.2f} {min(per):5.2f}–{max(per):5.2f}"
          f" {hit:>3d} of {len(per):<3d} {hc:14.1f} {mc:12.1f}")

if not pool:
    sys.exit("no rounds")
rs = [p[1] for p in pool]
q = st.quantiles(rs, n=4)
print(f"\nall {len(rs)} rounds: median {st.median(rs):.2f} (quartiles {q[0]:.2f}, {q[2]:.2f}),"
      f" {sum(r >= goal for r in rs)} at or above {goal}")

# The rounds in thirds by hnswlib's CPU a query: when hnswlib runs fast (the memory system
# quiet), memrl's lead is smallest.
pool.sort(key=lambda p: p[2])
n = len(pool)
print("\nrounds by hnswlib's CPU a query (thirds):")
for i, name in enumerate(("fastest", "middle", "slowest")):
    part = pool[i * n // 3:(i + 1) * n // 3]
    if not part:
        continue
    print(f"  {name:8s} hnswlib {part[0][2]:6.1f}–{part[-1][2]:6.1f} µs, memrl median {st.median(p[3] for p in part):6.1f} µs:"
          f" ratio median {st.median(p[1] for p in part):.2f} ({min(p[1] for p in part):.2f}–{max(p[1] for p in part):.2f}),"
          f" {sum(p[1] >= goal for p in part)} of {len(part)} at or above {goal}")
