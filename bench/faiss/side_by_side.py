#!/usr/bin/python3
"""Print memrl's and FAISS's `bench ann` JSON results side by side.

Usage: side_by_side.py FILE.json [FILE.json ...] — rows are told apart by
their "engine" field, so any number of memrl and FAISS result files can be
given. For every memrl setting, "FAISS QPS @ recall" is the best QPS of any
FAISS setting (of any of the given files) whose recall@10 is at least memrl's,
and the last column is memrl's QPS over it (> 1: memrl is faster at matched
recall). "-" means no FAISS setting reached that recall.
"""
import json
import sys


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows.extend(json.load(f))
    return rows


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: side_by_side.py FILE.json [FILE.json ...]")
    rows = load(sys.argv[1:])
    mem = [r for r in rows if r["engine"] == "memrl"]
    fai = [r for r in rows if r["engine"] != "memrl"]
    hdr = f"{'engine':<7} {'index':<22} {'nprobe':>6} {'refine':>6} {'R@1':>7} {'R@10':>7} {'QPS':>8} {'p99_us':>8} {'build_s':>8} {'index_MB':>9}"
    print(hdr)
    for r in fai + mem:
        print(f"{r['engine']:<7} {r['index']:<22} {r['nprobe']:>6} {r['refine']:>6} {r['recall1']:>7.4f} {r['recall10']:>7.4f} "
              f"{r['qps']:>8.0f} {r['p99_us']:>8.0f} {r['build_s']:>8.1f} {r['index_bytes'] / 1e6:>9.1f}")
    print()
    print(f"{'memrl setting':<34} {'R@10':>7} {'QPS':>8} {'FAISS QPS @ >= recall':>22} {'memrl/FAISS':>12}")
    for r in mem:
        better = [f for f in fai if f["recall10"] >= r["recall10"]]
        label = f"{r['index']} np={r['nprobe']} rf={r['refine']}"
        if not better:
            print(f"{label:<34} {r['recall10']:>7.4f} {r['qps']:>8.0f} {'-':>22} {'-':>12}")
            continue
        best = max(better, key=lambda f: f["qps"])
        desc = f"{best['qps']:.0f} (np={best['nprobe']},rf={best['refine']})"
        print(f"{label:<34} {r['recall10']:>7.4f} {r['qps']:>8.0f} {desc:>22} {r['qps'] / best['qps']:>12.2f}")


if __name__ == "__main__":
    main()
