#!/usr/bin/python3
"""FAISS side of `memrl bench ann`: same files, same nlist/M/bits, same table.

Runs IndexIVFPQ wrapped in IndexRefineFlat (8-bit codes) or IndexIVFPQFastScan
(4-bit codes; Debian's FAISS 1.7.3 aborts on an assertion when fast scan is
asked for many neighbours, k=100 or inside a refine, so it runs without
re-ranking), builds on --threads threads and searches on one thread, one
query per call, as a server answers them; or, with --batch B, the query
set in matrices of B rows, each one search call on --threads OpenMP threads
(omp_set_num_threads), as `memrl bench ann --batch B --threads T` runs it:
then qps is the queries over the sweep's wall time, cpu_us the process's
CPU time (every thread) per query, and p50_us/p99_us a batch's latency. Writes the same JSON fields as
memrl (nprobe, refine, recall1, recall10, qps, p50_us, p99_us, build_s,
index_bytes).

Run with Debian's Python (/usr/bin/python3), not the pyenv one first on PATH.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def ensure_faiss():
    try:
        import faiss  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        print("installing python3-faiss from Debian", file=sys.stderr)
        subprocess.check_call(["apt-get", "install", "-y", "python3-faiss", "python3-numpy",
                               "libopenblas0-pthread"])


ensure_faiss()
import faiss  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyshared"))
from texmex import read_vecs, row_line, summarize  # noqa: E402


def index_bytes(index):
    try:
        return int(faiss.serialize_index(index).size)
    except Exception:
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--gt", required=True)
    ap.add_argument("--learn")
    ap.add_argument("--nbase", type=int, default=0, help="use only the first N base vectors")
    ap.add_argument("--nlist", type=int, default=4096)
    ap.add_argument("--pqm", type=int, default=32)
    ap.add_argument("--pqbits", type=int, default=8)
    ap.add_argument("--nprobe", default="16,32,64,128")
    ap.add_argument("--refine", default="8")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--nq", type=int, default=0)
    ap.add_argument("--train-size", type=int, default=0)
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for the build, and for the search with --batch")
    ap.add_argument("--batch", type=int, default=0,
                    help="search the queries as matrices of N rows on --threads threads (0: one query per call, one thread)")
    ap.add_argument("--json")
    ap.add_argument("--out-ids")
    ap.add_argument("--index-cache", help="reuse the built index in this file (build_s then comes from "
                    "the run that built it, stored next to it as FILE.build_s)")
    a = ap.parse_args()

    xb = read_vecs(a.base, a.nbase)
    xq = read_vecs(a.query, a.nq)
    gt = read_vecs(a.gt, a.nq)
    xt = read_vecs(a.learn, a.train_size) if a.learn else xb[: (a.train_size or 100 * a.nlist)]
    d = xb.shape[1]
    print(f"data: {a.base}, {xb.shape[0]} base, {xq.shape[0]} queries, dim {d}")

    faiss.omp_set_num_threads(a.threads)
    if a.pqbits == 4:
        name = f"IVF{a.nlist},PQ{a.pqm}x4fs"
        index = faiss.index_factory(d, name)
        refines = [1]
    else:
        name = f"IVF{a.nlist},PQ{a.pqm}x{a.pqbits}"
        base_index = faiss.index_factory(d, name)
        index = faiss.IndexRefineFlat(base_index)
        refines = [int(x) for x in a.refine.split(",")]
    if a.index_cache and os.path.exists(a.index_cache):
        # `loaded` owns the C++ index; the downcast wrappers do not, so it
        # must stay referenced for as long as they are used (dropping it
        # freed the index under them: a segmentation fault).
        loaded = faiss.read_index(a.index_cache)
        index = loaded
        if a.pqbits != 4:
            index = faiss.downcast_index(loaded)
            base_index = faiss.downcast_index(index.base_index)
        with open(a.index_cache + ".build_s") as f:
            build_s = float(f.read())
        print(f"index: {name} (faiss {faiss.__version__}) read from {a.index_cache}, built earlier in {build_s:.1f}s")
    else:
        t0 = time.time()
        index.train(xt)
        train_s = time.time() - t0
        index.add(xb)
        build_s = time.time() - t0
        print(f"index: {name} (faiss {faiss.__version__}), trained on {xt.shape[0]} vectors in {train_s:.1f}s, "
              f"built in {build_s:.1f}s ({a.threads} threads)", flush=True)
        if a.index_cache:
            faiss.write_index(index, a.index_cache)
            with open(a.index_cache + ".build_s", "w") as f:
                f.write(str(build_s))
    # IVFlib's extract_index_ivf does not look inside IndexRefineFlat in 1.7.3.
    ivf = faiss.extract_index_ivf(base_index if a.pqbits != 4 else index)
    nbytes = index_bytes(index)
    if a.pqbits != 4:
        # Only the IVF-PQ part is comparable with memrl's index; the refine
        # copy of the raw vectors is memrl's vector store.
        nbytes = index_bytes(base_index)

    faiss.omp_set_num_threads(a.threads if a.batch > 0 else 1)
    results = []
    print(f"{'index':<22} {'nprobe':>6} {'refine':>6} {'R@1':>8} {'R@10':>8} {'QPS':>9} {'mean_us':>9} "
          f"{'p99_us':>9} {'build_s':>8} {'index_MB':>12} {'rss_MB':>10}")
    for np_ in [int(x) for x in a.nprobe.split(",")]:
        ivf.nprobe = np_
        for rf in refines:
            if a.pqbits != 4:
                index.k_factor = rf
            nq = xq.shape[0]
            lat = np.empty(nq)
            ids = np.empty((nq, a.k), dtype=np.int32)
            cpu0 = time.process_time_ns() if a.batch > 0 else time.thread_time_ns()
            blat = []
            step = a.batch if a.batch > 0 else 1
            for lo in range(0, nq, step):
                hi = min(lo + step, nq)
                s = time.perf_counter()
                _, I = index.search(xq[lo:hi], a.k)
                t = time.perf_counter() - s
                blat.append(t)
                lat[lo:hi] = t / (hi - lo)
                ids[lo:hi] = I
            if a.batch > 0:
                cpu_us = (time.process_time_ns() - cpu0) / 1000 / nq
            else:
                cpu_us = (time.thread_time_ns() - cpu0) / 1000 / nq
            r = summarize(ids, gt, lat, nprobe=np_, refine=rf, build_s=build_s, index_bytes=nbytes,
                          engine="faiss", index=name, cpu_us=cpu_us,
                          threads=a.threads if a.batch > 0 else 1, batch=max(a.batch, 1))
            if a.batch > 0:
                blat.sort()
                r["p50_us"] = blat[len(blat) // 2] * 1e6
                r["p99_us"] = blat[min(len(blat) - 1, len(blat) * 99 // 100)] * 1e6
            results.append(r)
            print(row_line(name, np_, rf, r), flush=True)
            if a.out_ids:
                with open(f"{a.out_ids}.nprobe{np_}.refine{rf}.ivecs", "wb") as f:
                    rows = np.hstack([np.full((nq, 1), a.k, dtype=np.int32), ids])
                    rows.tofile(f)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
