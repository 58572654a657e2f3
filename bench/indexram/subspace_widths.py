#!/usr/bin/python3
"""Does the choice of which PQ sub-spaces are wide matter? (issue 13, "codes")

    /usr/bin/python3 bench/indexram/subspace_widths.py --base ../shared/data/sift1m-deb/base.bvecs

ivfpq cuts Dim into M consecutive sub-spaces, the first Dim mod M of them
one dimension wider (ivfpq/params.go). For 128 dimensions as 48 sub-spaces
(32 of 3, 16 of 2) this measures, on residuals of the first 100,000 base
vectors to a 256-list k-means (FAISS, as Debian ships it), the mean squared
quantization error of 16-centroid k-means per sub-space (trained on 65,536
residuals, measured on the other 34,464) for: ivfpq's pattern, the reverse,
3-3-2 repeated, and the best pattern of consecutive sub-spaces (dynamic
programming over the measured error of every 2- and 3-wide window; chosen
on the measured residuals, so slightly optimistic), and for 64 sub-spaces
of 2 for scale. Prints each pattern's error and its ratio to ivfpq's.
"""
import argparse
import time

import faiss
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="base vectors, .bvecs with dimension 128")
    ap.add_argument("--n", type=int, default=100000)
    a = ap.parse_args()
    t0 = time.time()
    d, n = 128, a.n
    raw = np.fromfile(a.base, dtype=np.uint8, count=n * (4 + d))
    x = raw.reshape(n, 4 + d)[:, 4:].astype(np.float32)
    km = faiss.Kmeans(d, 256, niter=10, seed=1, verbose=False)
    km.train(x)
    _, lab = km.index.search(x, 1)
    r = x - km.centroids[lab[:, 0]]
    tr, te = r[:65536], r[65536:]
    cost = {}
    for w in (2, 3):
        for s in range(0, d - w + 1):
            k = faiss.Kmeans(w, 16, niter=25, seed=s, verbose=False)
            k.train(np.ascontiguousarray(tr[:, s:s + w]))
            dist, _ = k.index.search(np.ascontiguousarray(te[:, s:s + w]), 1)
            cost[(s, w)] = float(dist.mean())

    def pattern_cost(widths):
        s, c = 0, 0.0
        for w in widths:
            c += cost[(s, w)]
            s += w
        assert s == d
        return c

    # f[i][j]: least error covering dimensions [0, i) with j sub-spaces of 2.
    inf = float("inf")
    f = np.full((d + 1, 17), inf)
    f[0][0] = 0
    back = {}
    for i in range(d + 1):
        for j in range(17):
            if f[i][j] == inf:
                continue
            for w in (2, 3):
                jj = j + (w == 2)
                if i + w > d or jj > 16:
                    continue
                v = f[i][j] + cost[(i, w)]
                if v < f[i + w][jj]:
                    f[i + w][jj] = v
                    back[(i + w, jj)] = (i, j, w)
    best, i, j = [], d, 16
    while i > 0:
        i, j, w = back[(i, j)]
        best.append(w)
    best.reverse()
    ivfpq = [3] * 32 + [2] * 16
    for name, p in (("ivfpq (32 of 3, then 16 of 2)", ivfpq), ("16 of 2, then 32 of 3", [2] * 16 + [3] * 32),
                    ("3-3-2 repeated", [3, 3, 2] * 16), ("best consecutive", best)):
        print(f"{name:<32} {pattern_cost(p):9.1f}  {pattern_cost(p) / pattern_cost(ivfpq):.4f}")
    print(f"{'64 sub-spaces of 2':<32} {sum(cost[(s, 2)] for s in range(0, d, 2)):9.1f}")
    print("best pattern:", "".join(map(str, best)))
    print(f"residual energy {float((te ** 2).sum(1).mean()):.1f}; {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
