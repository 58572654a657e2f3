#!/usr/bin/python3
"""Exact ground truth for the first N vectors of a base set.

    prefix_gt.py --base base.bvecs --query query.bvecs --nbase 100000 [--nq 2000] [--k 100] --out gt100k.ivecs

Writes an .ivecs file: for each query, the 0-based rows of its k nearest
base vectors among the first --nbase by L2, best first, ties by lower row
(the order FAISS's IndexFlatL2 gives). The distances are computed in float64
from the integer components, so they are exact for .bvecs data.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hnsw_ann import read_vecs  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--nbase", type=int, required=True)
    ap.add_argument("--nq", type=int, default=0)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    xb = read_vecs(a.base, a.nbase).astype(np.float64)
    xq = read_vecs(a.query, a.nq).astype(np.float64)
    nb2 = (xb * xb).sum(axis=1)
    out = np.empty((xq.shape[0], a.k + 1), dtype=np.int32)
    out[:, 0] = a.k
    rows = np.arange(xb.shape[0])
    for s in range(0, xq.shape[0], 256):
        q = xq[s:s + 256]
        dist = nb2[None, :] - 2 * q @ xb.T + (q * q).sum(axis=1)[:, None]
        dist = np.rint(dist)  # integer data: exact squared distances
        for i in range(q.shape[0]):
            part = np.argpartition(dist[i], a.k)[: a.k + 1]
            order = np.lexsort((rows[part], dist[i][part]))[: a.k]
            out[s + i, 1:] = part[order]
    out.tofile(a.out)
    print(f"wrote {a.out}: {xq.shape[0]} queries × top {a.k} of the first {xb.shape[0]} base vectors")


if __name__ == "__main__":
    main()
