#!/usr/bin/python3
"""Rebuilds sift1m-deb (the benchmarks' 1M SIFT set) from Debian's packages.

    /usr/bin/python3 bench/data/make_sift1m.py --out DIR [--seed 1] \
        [--packages p1,p2] [--nbase 1000000] [--nlearn 100000] [--nq 10000]

Follows the set's recipe (bench/data/sift1m-deb/README.md) over the images its
manifest names (bench/data/sift1m-deb/manifest.tsv: side, package, path, and
how many descriptors the image gave):

1. `apt-get download` each package the manifest names (the version Debian
   serves now; DIR/versions.tsv records them) and unpack it with `dpkg-deb
   -x` under DIR/pkgs (nothing is installed).
2. SIFT of each image as bench/queryset/make_queries.py extracts it (the same
   recipe: grey 128 under alpha, 8-bit grayscale, longer side at most 2048 px
   by INTER_AREA, cv2.SIFT_create() defaults, at most 10,000 descriptors per
   image, rounded to uint8). Each image's count is compared with the
   manifest's and the mismatches are printed: with Debian's OpenCV 4.6 they
   should be none.
3. The images of side "base" give the pool of base and learn rows: exact
   duplicate rows dropped, then a seeded permutation; the first --nlearn rows
   are learn.bvecs, the next --nbase base.bvecs (disjoint). The images of
   side "query" give --nq seeded query rows (query.bvecs).
4. Exact top-100 ground truth of each query in the base by L2, ties by lower
   row (make_queries.py's exact_knn), written as groundtruth.ivecs, and
   SHA256SUMS.

**Not byte-identical to the shared copy**: the original run's sampling seed
and order were not recorded, and a package's version may have moved since;
the images, the extraction and the sizes are the same, so a benchmark's
figures on a rebuilt set should agree within noise, not to the digit.
--packages keeps only the named packages' images (a quick check:
`--packages lomiri-wallpapers-20.04 --nbase 5000 --nlearn 1000 --nq 100`
downloads 11 MB). Requires python3-opencv and python3-numpy (Debian). The
full run downloads about 770 MB of packages, extracts 1.5M descriptors from
1,762 images and computes 10,000 × 1M exact distances: hours on 2 cores.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "queryset"))
import make_queries as mq  # noqa: E402

MAX_PER_IMAGE = mq.MAX_PER_IMAGE


def read_manifest(path, keep):
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            side, pkg, rel, count = line.rstrip("\n").split("\t")
            if keep and pkg not in keep:
                continue
            rows.append((side, pkg, rel, int(count)))
    return rows


def fetch(pkgs, pkgdir, debdir):
    """Downloads and unpacks each package; returns {package: version}."""
    os.makedirs(debdir, exist_ok=True)
    os.makedirs(pkgdir, exist_ok=True)
    versions = {}
    for name in pkgs:
        debs = [d for d in os.listdir(debdir) if d.startswith(name + "_") and d.endswith(".deb")]
        if not debs:
            subprocess.run(["apt-get", "download", "-q", name], cwd=debdir, check=True)
            debs = [d for d in os.listdir(debdir) if d.startswith(name + "_") and d.endswith(".deb")]
        deb = os.path.join(debdir, debs[0])
        versions[name] = subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True, text=True,
                                        check=True).stdout.strip()
        root = os.path.join(pkgdir, name)
        if not os.path.isdir(root):
            # Unpack beside it and rename, so an interrupted run leaves no half tree.
            subprocess.run(["rm", "-rf", root + ".tmp"], check=True)
            subprocess.run(["dpkg-deb", "-x", deb, root + ".tmp"], check=True)
            os.rename(root + ".tmp", root)
    return versions


def sift(path, rng, cv2, detector):
    """The image's SIFT descriptors as uint8, at most MAX_PER_IMAGE (seeded)."""
    im = mq.gray8(path, cv2)
    if im is None:
        return np.zeros((0, mq.DIM), dtype=np.uint8)
    _, d = detector.detectAndCompute(im, None)
    if d is None or len(d) == 0:
        return np.zeros((0, mq.DIM), dtype=np.uint8)
    d = np.clip(np.rint(d), 0, 255).astype(np.uint8)
    if len(d) > MAX_PER_IMAGE:
        d = d[np.sort(rng.choice(len(d), MAX_PER_IMAGE, replace=False))]
    return d


def unique_rows(x):
    """x without exact duplicate rows, first occurrences in their order."""
    _, first = np.unique(x, axis=0, return_index=True)
    return x[np.sort(first)]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--manifest", default=os.path.join(HERE, "sift1m-deb", "manifest.tsv"))
    ap.add_argument("--packages", default="", help="comma-separated: keep only these packages' images")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nbase", type=int, default=1000000)
    ap.add_argument("--nlearn", type=int, default=100000)
    ap.add_argument("--nq", type=int, default=10000)
    ap.add_argument("--k", type=int, default=100)
    a = ap.parse_args()
    import cv2

    keep = set(p for p in a.packages.split(",") if p)
    rows = read_manifest(a.manifest, keep)
    if not rows:
        sys.exit("no manifest rows left (check --packages)")
    pkgs = sorted({r[1] for r in rows})
    os.makedirs(a.out, exist_ok=True)
    pkgdir = os.path.join(a.out, "pkgs")
    versions = fetch(pkgs, pkgdir, os.path.join(a.out, "debs"))
    with open(os.path.join(a.out, "versions.tsv"), "w") as f:
        for p in pkgs:
            f.write(f"{p}\t{versions[p]}\n")

    rng = np.random.default_rng(a.seed)
    detector = cv2.SIFT_create()
    pools = {"base": [], "query": []}
    mismatches = 0
    t0 = time.time()
    for i, (side, pkg, rel, want) in enumerate(rows):
        d = sift(os.path.join(pkgdir, rel), rng, cv2, detector)
        if len(d) != want:
            mismatches += 1
            print(f"  {rel}: {len(d)} descriptors, the manifest says {want}", flush=True)
        pools[side].append(d)
        if i % 100 == 0:
            print(f"  SIFT {i + 1}/{len(rows)} images ({time.time() - t0:.0f} s)", flush=True)
    print(f"SIFT of {len(rows)} images: {mismatches} counts differ from the manifest's", flush=True)

    pool = unique_rows(np.concatenate(pools["base"]))
    qpool = unique_rows(np.concatenate(pools["query"]))
    need = a.nlearn + a.nbase
    if len(pool) < need or len(qpool) < a.nq:
        sys.exit(f"pools too small: base+learn {len(pool)} < {need} or query {len(qpool)} < {a.nq}")
    order = rng.permutation(len(pool))
    learn = pool[order[:a.nlearn]]
    base = pool[order[a.nlearn:need]]
    query = qpool[np.sort(rng.choice(len(qpool), a.nq, replace=False))]
    mq.write_bvecs(os.path.join(a.out, "base.bvecs"), base)
    mq.write_bvecs(os.path.join(a.out, "learn.bvecs"), learn)
    mq.write_bvecs(os.path.join(a.out, "query.bvecs"), query)
    ids, _ = mq.exact_knn(base, query, a.k)
    mq.write_ivecs(os.path.join(a.out, "groundtruth.ivecs"), ids)
    with open(os.path.join(a.out, "SHA256SUMS"), "w") as f:
        for name in ("base.bvecs", "learn.bvecs", "query.bvecs", "groundtruth.ivecs"):
            f.write(f"{sha256(os.path.join(a.out, name))}  {name}\n")
    print(f"wrote {a.out}: base {len(base)}, learn {len(learn)}, query {len(query)}, "
          f"ground truth top {a.k}; pools {len(pool)} base+learn, {len(qpool)} query rows")


if __name__ == "__main__":
    main()
