#!/usr/bin/python3
"""hnswlib side of `memrl bench ann`: same files, same flags, same JSON.

Builds an HNSW graph with Debian's python3-hnswlib (M=16, efConstruction=200
by default: the settings users pick and the issue measured against) on
--threads threads, then sweeps the search breadth ef on one thread, one
query per call, as a server answers them; or, with --batch B, the query set
in matrices of B rows, each one knn_query call on --threads threads
(num_threads), as `memrl bench ann --batch B --threads T` runs it: then qps
is the queries over the sweep's wall time, cpu_us the process's CPU time
(every thread) per query, and p50_us/p99_us a batch's latency. Writes the same JSON fields as
memrl and bench/faiss (nprobe, refine, recall1, recall10, qps, mean_us,
p50_us, p99_us, build_s, index_bytes, rss_bytes, engine, index); nprobe
holds ef (the knob that trades recall for speed) and refine is 1; cpu_us
is the search thread's CPU time per query (as memrl's), Python call
included.

The IVF-PQ flags that compare.sh passes to every engine (--nlist, --pqm,
--pqbits, --refine, --learn, --train-size) are accepted and ignored, so the
same command line drives all three engines. --nprobe is ignored too: the
sweep is --ef. --nbase N uses the first N base vectors (the ground truth
must then be for that prefix: prefix_gt.py writes it).

index_bytes is the graph alone (links: hnswlib's size_links_level0 per
element plus the upper levels), not the float32 vectors hnswlib keeps inside
its index, so that it compares with memrl's index_bytes, which leaves out
the vector file.

Run with Debian's Python (/usr/bin/python3), not the pyenv one first on PATH.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def ensure_hnswlib():
    try:
        import hnswlib  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        print("installing python3-hnswlib from Debian", file=sys.stderr)
        subprocess.check_call(["apt-get", "install", "-y", "python3-hnswlib", "python3-numpy"])


ensure_hnswlib()
import hnswlib  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyshared"))
from texmex import read_vecs, row_line, summarize  # noqa: E402


def graph_bytes(index, n, m):
    """Bytes of the graph's links: level 0 holds 2·M links (4 bytes each)
    plus a 4-byte count per element; upper levels, reached by a share
    1/M of elements per level, hold M links plus a count each."""
    level0 = n * (4 + 2 * m * 4)
    upper = 0.0
    frac = 1.0 / m
    while frac * n >= 1:
        upper += frac * n * (4 + m * 4)
        frac /= m
    return int(level0 + upper)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--gt", required=True)
    ap.add_argument("--nbase", type=int, default=0, help="use only the first N base vectors")
    ap.add_argument("--M", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef", default="16,32,64,128,256,512")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--nq", type=int, default=0)
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for the build, and for the search with --batch")
    ap.add_argument("--batch", type=int, default=0,
                    help="search the queries as matrices of N rows on --threads threads (0: one query per call, one thread)")
    ap.add_argument("--json")
    ap.add_argument("--out-ids")
    ap.add_argument("--index-cache", help="reuse the built graph in this file (build_s then comes from "
                    "the run that built it, stored next to it as FILE.build_s)")
    # Accepted for the same command line as memrl and FAISS; ignored.
    for flag in ("--learn", "--nlist", "--pqm", "--pqbits", "--nprobe", "--refine", "--train-size"):
        ap.add_argument(flag)
    a = ap.parse_args()

    xb = read_vecs(a.base, a.nbase)
    xq = read_vecs(a.query, a.nq)
    gt = read_vecs(a.gt, a.nq)
    n, d = xb.shape
    if gt.shape[0] < xq.shape[0]:
        sys.exit(f"ground truth has {gt.shape[0]} rows for {xq.shape[0]} queries")
    if int(gt[:, :10].max()) >= n:
        sys.exit(f"ground truth names base row {int(gt[:, :10].max())} of {n} (does --nbase match the ground truth?)")
    print(f"data: {a.base}, {n} base, {xq.shape[0]} queries, dim {d}")

    name = f"HNSW{a.M},efC{a.ef_construction}"
    index = hnswlib.Index(space="l2", dim=d)
    if a.index_cache and os.path.exists(a.index_cache):
        index.load_index(a.index_cache, max_elements=n)
        with open(a.index_cache + ".build_s") as f:
            build_s = float(f.read())
        print(f"index: {name} (hnswlib) read from {a.index_cache}, built earlier in {build_s:.1f}s")
    else:
        t0 = time.time()
        index.init_index(max_elements=n, ef_construction=a.ef_construction, M=a.M, random_seed=100)
        index.set_num_threads(a.threads)
        index.add_items(xb, np.arange(n))
        build_s = time.time() - t0
        print(f"index: {name} (hnswlib), built in {build_s:.1f}s ({a.threads} threads)", flush=True)
        if a.index_cache:
            index.save_index(a.index_cache)
            with open(a.index_cache + ".build_s", "w") as f:
                f.write(str(build_s))
    nbytes = graph_bytes(index, n, a.M)

    index.set_num_threads(a.threads if a.batch > 0 else 1)
    results = []
    print(f"{'index':<22} {'ef':>6} {'refine':>6} {'R@1':>8} {'R@10':>8} {'QPS':>9} {'mean_us':>9} "
          f"{'p99_us':>9} {'build_s':>8} {'index_MB':>12} {'rss_MB':>10}")
    for ef in [int(x) for x in a.ef.split(",")]:
        index.set_ef(max(ef, a.k))
        nq = xq.shape[0]
        lat = np.empty(nq)
        ids = np.empty((nq, a.k), dtype=np.int64)
        if a.batch > 0:
            # Matrices of B queries on --threads threads; the process's
            # CPU time (every thread), as memrl's --batch reports it.
            cpu0 = time.process_time_ns()
            blat = []
            for lo in range(0, nq, a.batch):
                hi = min(lo + a.batch, nq)
                s = time.perf_counter()
                labels, _ = index.knn_query(xq[lo:hi], k=a.k, num_threads=a.threads)
                t = time.perf_counter() - s
                blat.append(t)
                lat[lo:hi] = t / (hi - lo)
                ids[lo:hi] = labels
            cpu_us = (time.process_time_ns() - cpu0) / 1000 / nq
            r = summarize(ids, gt, lat, nprobe=ef, refine=1, ef=ef, build_s=build_s, index_bytes=nbytes,
                          engine="hnswlib", index=name, cpu_us=cpu_us, threads=a.threads, batch=a.batch)
            blat.sort()
            r["p50_us"] = blat[len(blat) // 2] * 1e6
            r["p99_us"] = blat[min(len(blat) - 1, len(blat) * 99 // 100)] * 1e6
        else:
            # Thread CPU time of the whole sweep (search runs on this thread:
            # set_num_threads(1)), as memrl's cpu_us: unlike QPS it does not
            # move with other work on the machine. It includes the Python call.
            cpu0 = time.thread_time_ns()
            for i in range(nq):
                q = xq[i:i + 1]
                s = time.perf_counter()
                labels, _ = index.knn_query(q, k=a.k)
                lat[i] = time.perf_counter() - s
                ids[i] = labels[0]
            cpu_us = (time.thread_time_ns() - cpu0) / 1000 / nq
            r = summarize(ids, gt, lat, nprobe=ef, refine=1, ef=ef, build_s=build_s, index_bytes=nbytes,
                          engine="hnswlib", index=name, cpu_us=cpu_us, threads=1, batch=1)
        results.append(r)
        print(row_line(name, ef, 1, r), flush=True)
        if a.out_ids:
            with open(f"{a.out_ids}.ef{ef}.ivecs", "wb") as f:
                rows = np.hstack([np.full((nq, 1), a.k, dtype=np.int32), ids.astype(np.int32)])
                rows.tofile(f)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
