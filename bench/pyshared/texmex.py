"""Readers shared by the Python peers of `memrl bench ann` (bench/faiss,
bench/hnsw): TEXMEX .bvecs/.fvecs/.ivecs files as numpy arrays, and the
process's resident memory."""

import os

import numpy as np


def read_vecs(path, limit=0):
    """The vectors of a TEXMEX file (each record: dim as int32, then dim
    components of 1 byte for .bvecs, 4 for .fvecs/.ivecs), at most limit of
    them when limit > 0: float32 rows for .bvecs and .fvecs, int32 for
    .ivecs."""
    ext = os.path.splitext(path)[1].lower()
    raw = np.fromfile(path, dtype=np.uint8)
    dim = int(raw[:4].view(np.int32)[0])
    elem = {".bvecs": 1, ".fvecs": 4, ".ivecs": 4}[ext]
    rec = 4 + dim * elem
    n = raw.size // rec
    if limit and n > limit:
        n = limit
    body = raw[: n * rec].reshape(n, rec)[:, 4:]
    if ext == ".bvecs":
        return np.ascontiguousarray(body.astype(np.float32))
    if ext == ".fvecs":
        return np.ascontiguousarray(body.copy().view(np.float32))
    return np.ascontiguousarray(body.copy().view(np.int32))


def rss_bytes():
    """The process's resident set size (VmRSS), in bytes; 0 if unknown."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def summarize(ids, gt, lat, **fields):
    """The result row of one search setting, in the JSON bench/ann reads:
    recall@1 and @10 of ids (one row of neighbour ids per query) against
    the ground truth gt, and QPS, mean, p50 and p99 (µs) from lat (seconds
    per query); fields (setting, engine, index, build time, sizes) are
    copied in."""
    nq = len(lat)
    total = float(np.sum(lat))
    lat_sorted = np.sort(lat)
    r = dict(fields)
    r.update(
        recall1=float(np.mean(ids[:, 0] == gt[:, 0])),
        recall10=float(np.mean([len(set(ids[i, :10].tolist()) & set(gt[i, :10].tolist())) / 10 for i in range(nq)])),
        qps=nq / total, mean_us=total / nq * 1e6, p50_us=float(lat_sorted[nq // 2] * 1e6),
        p99_us=float(lat_sorted[min(nq - 1, nq * 99 // 100)] * 1e6),
        rss_bytes=rss_bytes())
    return r


def row_line(name, a, b, r):
    """One printed table row for result r of setting (a, b)."""
    return (f"{name:<22} {a:>6} {b:>6} {r['recall1']:>8.4f} {r['recall10']:>8.4f} {r['qps']:>9.0f} "
            f"{r['mean_us']:>9.1f} {r['p99_us']:>9.1f} {r['build_s']:>8.1f} {r['index_bytes'] / 1e6:>12.1f} "
            f"{r['rss_bytes'] / 1e6:>10.1f}")
