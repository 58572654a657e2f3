#!/usr/bin/python3
"""Recall–QPS plot and table of batched searches (issue 29).

Usage: plot_batch.py [--cpu] OUT.png FILE.json [FILE.json ...]

Reads the JSON that `memrl bench ann`, bench/hnsw/hnsw_ann.py and
bench/faiss/faiss_ann.py write (one object per setting, with engine,
threads, batch, recall10, qps, cpu_us) and draws recall@10 against QPS
(log scale), one curve per engine, thread count and batch size, each
curve the settings' best QPS at each recall (points no faster than a
point of higher recall are left out, so a curve is the engine's frontier).
Several files of one engine and thread count (repeated runs) are pooled
into one curve per run order: the median QPS of a setting over the runs.
Prints the curves' points as a Markdown table, and for recall@10 0.90,
0.95, 0.98 and 0.99 each curve's best QPS reaching it, with the ratios of
memrl's to the others'.

--cpu plots, instead of the measured QPS, the QPS the CPU time allows on
the run's threads: threads · 10⁶ / cpu_us (cpu_us being the process's CPU
time per query with --batch). On a machine shared with other work the wall
clock measures the share of the cores each run got; CPU time measures the
work a query took, so runs at different loads compare (it assumes the
threads scale, which a batch of 2,000 on 2 threads nearly does, and it
counts a thread spinning in OpenMP's barrier as work, as it is).

Run with Debian's Python (/usr/bin/python3) and python3-matplotlib.
"""
import json
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(r):
    thr, b = r.get("threads", 1), r.get("batch", 1)
    mode = f"batch {b}" if b > 1 else "one query per call"
    return f"{r['engine']} {r.get('index', '')}, {thr} thread{'s' if thr != 1 else ''}, {mode}"


def frontier(points):
    """The points no other point beats in both recall and QPS, by recall."""
    out = []
    for rec, qps, setting in sorted(points, key=lambda p: (-p[0], -p[1])):
        if not out or qps > out[-1][1]:
            out.append((rec, qps, setting))
    return sorted(out)


def main():
    args = sys.argv[1:]
    cpu = bool(args) and args[0] == "--cpu"
    if cpu:
        args = args[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    out_png, files = args[0], args[1:]
    unit = "QPS from CPU time" if cpu else "QPS"
    # (curve, setting) -> [qps over runs], and recall (the same every run)
    runs = defaultdict(list)
    recall = {}
    for path in files:
        with open(path) as f:
            for r in json.load(f):
                setting = (r.get("nprobe"), r.get("refine"), r.get("prune"))
                key = (label(r), setting)
                runs[key].append(r.get("threads", 1) * 1e6 / r["cpu_us"] if cpu else r["qps"])
                recall[key] = r["recall10"]
    curves = defaultdict(list)
    for (lab, setting), qs in runs.items():
        curves[lab].append((recall[(lab, setting)], statistics.median(qs), setting))
    fig, ax = plt.subplots(figsize=(8, 5.5))
    print(f"| curve | setting (nprobe/ef, refine) | recall@10 | {unit} (median of runs) |")
    print("|---|---|---:|---:|")
    fronts = {}
    for lab in sorted(curves):
        fr = frontier(curves[lab])
        fronts[lab] = fr
        ax.plot([p[0] for p in fr], [p[1] for p in fr], marker="o", markersize=3, label=lab)
        for rec, qps, s in fr:
            print(f"| {lab} | {s[0]}, {s[1]} | {rec:.4f} | {qps:,.0f} |")
    ax.set_yscale("log")
    ax.set_xlabel("recall@10")
    ax.set_ylabel("queries per second from CPU time, threads·10⁶/cpu_us (log)" if cpu else "queries per second (log)")
    ax.set_title("sift1m-deb base, first 2,000 held-out queries, k = 10")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    print()
    levels = [0.90, 0.95, 0.98, 0.99]
    print("| curve | " + " | ".join(f"best {unit} at ≥ {x}" for x in levels) + " |")
    print("|---|" + "---:|" * len(levels))
    best = {}
    for lab, fr in sorted(fronts.items()):
        row = []
        for x in levels:
            q = max((p[1] for p in fr if p[0] >= x), default=None)
            best[(lab, x)] = q
            row.append(f"{q:,.0f}" if q else "—")
        print(f"| {lab} | " + " | ".join(row) + " |")
    mem = [lab for lab in fronts if lab.startswith("memrl")]
    others = [lab for lab in fronts if not lab.startswith("memrl")]
    if mem and others:
        print()
        print("| memrl over | " + " | ".join(f"at ≥ {x}" for x in levels) + " |")
        print("|---|" + "---:|" * len(levels))
        for m in mem:
            for o in others:
                row = []
                for x in levels:
                    a, b = best.get((m, x)), best.get((o, x))
                    row.append(f"{a / b:.2f}×" if a and b else "—")
                print(f"| {m} / {o} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
