#!/usr/bin/python3
"""Print memrl's, FAISS's and hnswlib's `bench ann` JSON results side by side.

Usage: side_by_side.py FILE.json [FILE.json ...] — rows are told apart by
their "engine" field (memrl, faiss, hnswlib), so any number of result files
of each can be given. For every memrl setting, each peer's column is the best
QPS of any of that peer's settings whose recall@10 is at least memrl's, and
the ratio column is memrl's QPS over it (> 1: memrl is faster at matched
recall). "-" means no setting of that peer reached that recall. For hnswlib
the nprobe column holds ef.

A last table gives, for recall targets from 0.90 to 0.995, each engine's best
QPS among its settings reaching the target; and when every row has cpu_us
(thread CPU time per query), the same by least CPU time, with hnswlib's
over memrl's (> 1: memrl needs less CPU per query).
"""
import json
import sys

PEERS = ("faiss", "hnswlib")


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows.extend(json.load(f))
    return rows


def best_at(rows, recall):
    better = [r for r in rows if r["recall10"] >= recall]
    return max(better, key=lambda r: r["qps"]) if better else None


def setting(r):
    if r["engine"] == "hnswlib":
        return f"ef={r['nprobe']}"
    if r.get("prune"):
        return f"np={r['nprobe']},rf={r['refine']},pf={r['prune']:g}"
    return f"np={r['nprobe']},rf={r['refine']}"


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: side_by_side.py FILE.json [FILE.json ...]")
    rows = load(sys.argv[1:])
    mem = [r for r in rows if r["engine"] == "memrl"]
    peers = {p: [r for r in rows if r["engine"] == p] for p in PEERS}
    peers = {p: rs for p, rs in peers.items() if rs}
    hdr = (f"{'engine':<8} {'index':<22} {'nprobe':>6} {'refine':>6} {'R@1':>7} {'R@10':>7} {'QPS':>8} "
           f"{'p99_us':>8} {'build_s':>8} {'index_MB':>9}")
    print(hdr)
    for r in [r for p in peers.values() for r in p] + mem:
        print(f"{r['engine']:<8} {r['index']:<22} {r['nprobe']:>6} {r['refine']:>6} {r['recall1']:>7.4f} {r['recall10']:>7.4f} "
              f"{r['qps']:>8.0f} {r['p99_us']:>8.0f} {r['build_s']:>8.1f} {r['index_bytes'] / 1e6:>9.1f}")
    print()
    head = f"{'memrl setting':<34} {'R@10':>7} {'QPS':>8}"
    for p in peers:
        head += f" {p + ' QPS @ >= recall':>26} {'memrl/' + p:>14}"
    print(head)
    for r in mem:
        line = f"{r['index'] + ' ' + setting(r):<34} {r['recall10']:>7.4f} {r['qps']:>8.0f}"
        for p, rs in peers.items():
            b = best_at(rs, r["recall10"])
            if b is None:
                line += f" {'-':>26} {'-':>14}"
            else:
                desc = "%.0f (%s)" % (b["qps"], setting(b))
                line += f" {desc:>26} {r['qps'] / b['qps']:>14.2f}"
        print(line)
    print()
    engines = {"memrl": mem, **peers}
    head = f"{'recall@10 >=':<13}"
    for e in engines:
        head += f" {e + ' best QPS (setting)':>32}"
    print(head)
    for target in (0.90, 0.95, 0.98, 0.99, 0.995):
        line = f"{target:<13}"
        for e, rs in engines.items():
            b = best_at(rs, target)
            desc = "-" if b is None else "%.0f (%s)" % (b["qps"], setting(b))
            line += f" {desc:>32}"
        print(line)
    # The same by thread CPU time per query, when every row has it (memrl's
    # bench ann and hnsw_ann.py write cpu_us): on a loaded machine QPS moves
    # with the load, CPU time much less.
    if all(r.get("cpu_us") for rs in engines.values() for r in rs):
        print()
        head = f"{'recall@10 >=':<13}"
        for e in engines:
            head += f" {e + ' least cpu_us (setting)':>32}"
        if "hnswlib" in engines:
            head += f" {'memrl/hnswlib by CPU':>22}"
        print(head)
        for target in (0.90, 0.95, 0.98, 0.99, 0.995):
            line = f"{target:<13}"
            best = {}
            for e, rs in engines.items():
                ok = [r for r in rs if r["recall10"] >= target]
                b = min(ok, key=lambda r: r["cpu_us"]) if ok else None
                best[e] = b
                desc = "-" if b is None else "%.1f (%s)" % (b["cpu_us"], setting(b))
                line += f" {desc:>32}"
            if "hnswlib" in engines:
                m, h = best.get("memrl"), best.get("hnswlib")
                line += f" {'-' if not (m and h) else '%.2f' % (h['cpu_us'] / m['cpu_us']):>22}"
            print(line)


if __name__ == "__main__":
    main()
