#!/usr/bin/python3
"""Summarise bench/hnsw/rounds.sh's output: memrl against hnswlib per recall line.

Usage: rounds_summary.py OUTDIR — reads OUTDIR/rN/LINE.{memrl,hnswlib}.json
(LINE is SET_TARGET, e.g. shared_0.95) and prints, per line, for every round,
each engine's least thread CPU time per query (cpu_us) among its settings
whose recall@10 reaches the target, the setting, and hnswlib's over memrl's
(> 1: memrl needs less CPU per query), then the same ratio by QPS. Ratios are
taken within a round: a shared machine moves both engines between rounds.
"""
import glob
import json
import os
import sys


def best(rows, target, key, better):
    ok = [r for r in rows if r["recall10"] >= target and r.get(key)]
    if not ok:
        return None
    return better(ok, key=lambda r: r[key])


def setting(r):
    if r["engine"] == "hnswlib":
        return "ef %d" % r["nprobe"]
    return "%d/%d/%g" % (r["nprobe"], r["refine"], r.get("prune", 1))


def main():
    out = sys.argv[1]
    rounds = sorted(glob.glob(os.path.join(out, "r[0-9]*")), key=lambda p: int(p.rsplit("r", 1)[1]))
    lines = sorted({os.path.basename(p)[:-len(".memrl.json")]
                    for r in rounds for p in glob.glob(os.path.join(r, "*.memrl.json"))},
                   key=lambda s: (s.split("_")[0] != "shared", float(s.split("_")[1])))
    print("%-14s %5s  %-34s %-22s %9s %9s" % ("line", "round", "memrl cpu_us (nprobe/refine/STOP)",
                                              "hnswlib cpu_us (ef)", "cpu ratio", "qps ratio"))
    for line in lines:
        target = float(line.split("_")[1])
        for rd in rounds:
            try:
                with open(os.path.join(rd, line + ".memrl.json")) as f:
                    m = json.load(f)
                with open(os.path.join(rd, line + ".hnswlib.json")) as f:
                    h = json.load(f)
            except FileNotFoundError:
                continue
            mc, hc = best(m, target, "cpu_us", min), best(h, target, "cpu_us", min)
            mq, hq = best(m, target, "qps", max), best(h, target, "qps", max)
            ms = "%.1f (%s)" % (mc["cpu_us"], setting(mc)) if mc else "- (recall not reached)"
            hs = "%.1f (%s)" % (hc["cpu_us"], setting(hc)) if hc else "- (recall not reached)"
            cr = "%.2f" % (hc["cpu_us"] / mc["cpu_us"]) if mc and hc else "-"
            qr = "%.2f" % (mq["qps"] / hq["qps"]) if mq and hq else "-"
            print("%-14s %5s  %-34s %-22s %9s %9s" % (line, os.path.basename(rd)[1:], ms, hs, cr, qr))


if __name__ == "__main__":
    main()
