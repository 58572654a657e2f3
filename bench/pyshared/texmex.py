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
