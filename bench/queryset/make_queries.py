#!/usr/bin/python3
"""A query set of our own for the 1M SIFT base, from photographs unlike it.

    /usr/bin/python3 bench/queryset/make_queries.py --base ../shared/data/sift1m-deb/base.bvecs \
        --out /work/queryset-data [--shared-query ../shared/data/sift1m-deb/query.bvecs \
        --shared-gt ../shared/data/sift1m-deb/groundtruth.ivecs]

What it does, in order (every step is deterministic given the package
versions and --seed):

1. `apt-get download` the Debian packages named in PACKAGES at the pinned
   versions (none of them is in ../shared/data/sift1m-deb/manifest.tsv, so no
   image of the base comes back as a query) and unpack them with
   `dpkg-deb -x` under OUT/pkgs (nothing is installed).
2. SIFT exactly as ../shared/data/sift1m-deb/README.md says the base was
   made: each image read unchanged, alpha composited on grey 128, converted
   to 8-bit grayscale, shrunk with INTER_AREA so that the longer side is at
   most 2048 px, `cv2.SIFT_create()` with default parameters, at most 10,000
   descriptors per image (a seeded sample when there are more), components
   rounded and clipped to 0..255 as uint8.
3. Queries: at most --per-image descriptors from each image (seeded
   sample), pooled, exact duplicate rows dropped, then --nq drawn from the
   pool (seeded), so no single picture dominates. Written as
   OUT/query.bvecs.
4. Exact ground truth: the --k nearest base rows of each query by L2, best
   first, ties by lower row (FAISS IndexFlatL2's order), written as
   OUT/groundtruth.ivecs. Distances come from float32 matrix products,
   which are exact here (every partial sum is an integer below 2**24:
   components <= 255, 128 of them, norms about 512), then the best k+64
   candidates are re-scored in int64 and sorted; --verify queries are
   checked against a full int64 brute force over the whole base.
5. How unlike the base the queries are: the distance (L2, not squared) to
   the 1st and 10th neighbours, for our queries and (if given) the shared
   ones, and the share of queries with a near-duplicate in the base (1st
   neighbour closer than 0.1 x the median 1st-neighbour distance of the
   shared queries, and closer than fixed distances). Written to
   OUT/unlike.json and printed.
6. OUT/manifest.json: package names and versions, OpenCV and numpy
   versions, seed, parameters, SHA-256 of the outputs; OUT/manifest.tsv:
   one line per image (package, path, descriptors extracted, queries
   taken). Both are small and are copied into bench/queryset/.

Requires python3-opencv and python3-numpy (Debian). The unpacked packages
and outputs stay under OUT (tens of MB), not in git.
"""
import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np

# (package, pinned version, glob of the images used, relative to the unpacked root).
# gimp-help-en: the photographs of GIMP's manual (filter examples on photos of
# buildings, flowers, animals, people, cars; tutorial photos; some dialogs).
# mypaint-data-extras: scans of paper and canvas (MyPaint's backgrounds).
PACKAGES = [
    ("gimp-help-en", "2.10.34-2", "usr/share/gimp/2.0/help/en/images/**/*.jpg"),
    ("mypaint-data-extras", "2.0.1-9", "usr/share/mypaint/backgrounds/**/*.png"),
]

MAX_SIDE = 2048
MAX_PER_IMAGE = 10000
DIM = 128


def fetch(pkgdir, debdir):
    """Downloads and unpacks each package; returns {package: unpacked root}."""
    os.makedirs(debdir, exist_ok=True)
    roots = {}
    for name, version, _ in PACKAGES:
        debs = glob.glob(os.path.join(debdir, f"{name}_*.deb"))
        if not debs:
            subprocess.run(["apt-get", "download", "-q", f"{name}={version}"], cwd=debdir, check=True)
            debs = glob.glob(os.path.join(debdir, f"{name}_*.deb"))
        got = subprocess.run(["dpkg-deb", "-f", debs[0], "Version"], capture_output=True, text=True,
                             check=True).stdout.strip()
        if got != version:
            sys.exit(f"{debs[0]}: version {got}, want {version} (the set would not be reproducible)")
        root = os.path.join(pkgdir, name)
        if not os.path.isdir(root):
            # Unpack beside it and rename, so an interrupted run leaves no half tree.
            os.makedirs(pkgdir, exist_ok=True)
            subprocess.run(["rm", "-rf", root + ".tmp"], check=True)
            subprocess.run(["dpkg-deb", "-x", debs[0], root + ".tmp"], check=True)
            os.rename(root + ".tmp", root)
        roots[name] = root
    return roots


def gray8(path, cv2):
    """The image as 8-bit grayscale, alpha composited on grey 128, shrunk
    (INTER_AREA) so the longer side is at most MAX_SIDE; None if unreadable."""
    im = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if im is None:
        return None
    if im.dtype == np.uint16:
        im = (im.astype(np.float32) / 257.0 + 0.5).astype(np.uint8)
    elif im.dtype != np.uint8:
        im = cv2.normalize(im, None, 0, 255, cv2.NORM_MINMAX).astype(np.uint8)
    if im.ndim == 3 and im.shape[2] == 4:
        a = im[:, :, 3:4].astype(np.float32) / 255.0
        rgb = im[:, :, :3].astype(np.float32) * a + 128.0 * (1.0 - a)
        im = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    if im.ndim == 3 and im.shape[2] == 3:
        im = cv2.cvtColor(im, cv2.COLOR_BGR2GRAY)
    elif im.ndim == 3:
        im = im[:, :, 0]
    h, w = im.shape[:2]
    if max(h, w) > MAX_SIDE:
        s = MAX_SIDE / max(h, w)
        im = cv2.resize(im, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)
    return im


def extract(roots, rng, per_image, cv2):
    """SIFT of every image; returns (pool rows, manifest lines)."""
    sift = cv2.SIFT_create()
    pool, lines = [], []
    for name, _, pattern in PACKAGES:
        for path in sorted(glob.glob(os.path.join(roots[name], pattern), recursive=True)):
            rel = os.path.relpath(path, roots[name])
            im = gray8(path, cv2)
            if im is None:
                lines.append((name, rel, 0, 0))
                continue
            _, d = sift.detectAndCompute(im, None)
            if d is None or len(d) == 0:
                lines.append((name, rel, 0, 0))
                continue
            d = np.clip(np.rint(d), 0, 255).astype(np.uint8)
            if len(d) > MAX_PER_IMAGE:
                d = d[np.sort(rng.choice(len(d), MAX_PER_IMAGE, replace=False))]
            take = d[np.sort(rng.choice(len(d), min(per_image, len(d)), replace=False))]
            pool.append(take)
            lines.append((name, rel, len(d), len(take)))
    return np.concatenate(pool), lines


def write_bvecs(path, x):
    n = x.shape[0]
    rec = np.empty((n, 4 + DIM), dtype=np.uint8)
    rec[:, :4] = np.frombuffer(np.int32(DIM).tobytes(), dtype=np.uint8)
    rec[:, 4:] = x
    rec.tofile(path)


def write_ivecs(path, x):
    out = np.empty((x.shape[0], x.shape[1] + 1), dtype=np.int32)
    out[:, 0] = x.shape[1]
    out[:, 1:] = x
    out.tofile(path)


def read_bvecs(path):
    raw = np.fromfile(path, dtype=np.uint8)
    dim = int(raw[:4].view(np.int32)[0])
    return raw.reshape(-1, 4 + dim)[:, 4:]


def read_ivecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    return raw.reshape(-1, raw[0] + 1)[:, 1:]


def exact_knn(base_u8, q_u8, k, chunk=128):
    """The k nearest base rows of each query by L2 (ties by lower row) and
    their squared distances, exactly (see the module doc)."""
    xb = base_u8.astype(np.float32)
    nb2 = (xb * xb).sum(axis=1)
    bi = base_u8.astype(np.int64)
    ids = np.empty((len(q_u8), k), dtype=np.int32)
    d2 = np.empty((len(q_u8), k), dtype=np.int64)
    extra = k + 64
    t0 = time.time()
    for s in range(0, len(q_u8), chunk):
        q = q_u8[s:s + chunk].astype(np.float32)
        dist = nb2[None, :] - 2.0 * (q @ xb.T) + (q * q).sum(axis=1)[:, None]
        cand = np.argpartition(dist, extra, axis=1)[:, :extra]
        for i in range(q.shape[0]):
            c = cand[i]
            diff = bi[c] - q_u8[s + i].astype(np.int64)
            e = (diff * diff).sum(axis=1)
            order = np.lexsort((c, e))[:k]
            ids[s + i] = c[order]
            d2[s + i] = e[order]
        if s // chunk % 8 == 0:
            print(f"  ground truth {s + q.shape[0]}/{len(q_u8)} ({time.time() - t0:.0f} s)", flush=True)
    return ids, d2


def verify(base_u8, q_u8, ids, rows):
    """Checks ids for the given query rows against a full int64 brute force."""
    bi = base_u8.astype(np.int32)
    k = ids.shape[1]
    for r in rows:
        diff = bi - q_u8[r].astype(np.int32)
        e = np.einsum("ij,ij->i", diff, diff)
        want = np.lexsort((np.arange(len(e)), e))[:k]
        if not np.array_equal(want, ids[r]):
            sys.exit(f"ground truth of query {r} differs from the brute force")


def nn_dist(base_u8, q_u8, gt, col):
    """L2 distance of each query to its gt[:, col] neighbour."""
    diff = base_u8[gt[:, col]].astype(np.int64) - q_u8.astype(np.int64)
    return np.sqrt((diff * diff).sum(axis=1))


def stats(d1, d10, ref_median):
    return {
        "nq": int(len(d1)),
        "d1_median": float(np.median(d1)), "d1_p10": float(np.percentile(d1, 10)),
        "d1_p90": float(np.percentile(d1, 90)),
        "d10_median": float(np.median(d10)),
        "d1_over_d10_median": float(np.median(d1 / np.maximum(d10, 1e-9))),
        "share_d1_below_0.1x_shared_median": float(np.mean(d1 < 0.1 * ref_median)),
        "share_d1_below_0.5x_shared_median": float(np.mean(d1 < 0.5 * ref_median)),
        "share_d1_below_50": float(np.mean(d1 < 50)),
        "share_d1_below_100": float(np.mean(d1 < 100)),
        "share_d1_zero": float(np.mean(d1 == 0)),
    }


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="base.bvecs of the set the queries are for")
    ap.add_argument("--out", required=True, help="output folder (not in git)")
    ap.add_argument("--nq", type=int, default=10000)
    ap.add_argument("--per-image", type=int, default=50, help="at most this many queries from one image")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--verify", type=int, default=20, help="queries checked by a full brute force")
    ap.add_argument("--shared-query", help="the shared query set, for the unlikeness figures")
    ap.add_argument("--shared-gt", help="its ground truth")
    ap.add_argument("--copy-manifest", default=os.path.dirname(os.path.abspath(__file__)),
                    help="folder that gets copies of manifest.json, manifest.tsv and unlike.json")
    a = ap.parse_args()

    import cv2  # python3-opencv

    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    roots = fetch(os.path.join(a.out, "pkgs"), os.path.join(a.out, "debs"))

    t0 = time.time()
    pool, lines = extract(roots, rng, a.per_image, cv2)
    print(f"SIFT: {sum(1 for ln in lines if ln[2])} images, pool {len(pool)} rows "
          f"(<= {a.per_image} per image) in {time.time() - t0:.0f} s", flush=True)
    # Drop exact duplicate rows, keeping the first (np.unique sorts; keep pool order).
    _, first = np.unique(pool, axis=0, return_index=True)
    pool = pool[np.sort(first)]
    if len(pool) < a.nq:
        sys.exit(f"pool has {len(pool)} distinct rows, fewer than --nq {a.nq}: raise --per-image")
    pick = np.sort(rng.choice(len(pool), a.nq, replace=False))
    q = np.ascontiguousarray(pool[pick])
    qpath = os.path.join(a.out, "query.bvecs")
    write_bvecs(qpath, q)

    base = read_bvecs(a.base)
    t0 = time.time()
    ids, d2 = exact_knn(base, q, a.k)
    gt_s = time.time() - t0
    vrows = rng.choice(a.nq, min(a.verify, a.nq), replace=False)
    verify(base, q, ids, vrows)
    print(f"ground truth: {a.nq} x top {a.k} in {gt_s:.0f} s; {len(vrows)} queries verified by brute force")
    gpath = os.path.join(a.out, "groundtruth.ivecs")
    write_ivecs(gpath, ids)

    ours_d1, ours_d10 = np.sqrt(d2[:, 0]), np.sqrt(d2[:, 9])
    unlike = {}
    ref_median = float(np.median(ours_d1))
    if a.shared_query and a.shared_gt:
        sq, sg = read_bvecs(a.shared_query), read_ivecs(a.shared_gt)
        s1, s10 = nn_dist(base, sq, sg, 0), nn_dist(base, sq, sg, 9)
        ref_median = float(np.median(s1))
        unlike["shared"] = stats(s1, s10, ref_median)
    unlike["ours"] = stats(ours_d1, ours_d10, ref_median)
    upath = os.path.join(a.out, "unlike.json")
    with open(upath, "w") as f:
        json.dump(unlike, f, indent=1)
    print(json.dumps(unlike, indent=1))

    # Per image: which images, how many descriptors, how many queries survived the draw.
    taken = np.zeros(len(lines), dtype=np.int64)
    owner = np.repeat(np.arange(len(lines)), [ln[3] for ln in lines])[np.sort(first)][pick]
    np.add.at(taken, owner, 1)
    tpath = os.path.join(a.out, "manifest.tsv")
    with open(tpath, "w") as f:
        f.write("package\tpath_in_package_root\tdescriptors\tin_pool\tqueries\n")
        for ln, t in zip(lines, taken):
            f.write(f"{ln[0]}\t{ln[1]}\t{ln[2]}\t{ln[3]}\t{t}\n")
    man = {
        "packages": [{"name": n, "version": v, "images": g} for n, v, g in PACKAGES],
        "opencv": cv2.__version__, "numpy": np.__version__,
        "seed": a.seed, "nq": a.nq, "per_image": a.per_image, "k": a.k, "max_side": MAX_SIDE,
        "max_descriptors_per_image": MAX_PER_IMAGE,
        "images_used": int(sum(1 for ln in lines if ln[3])), "pool_rows": int(len(pool)),
        "base": os.path.abspath(a.base), "base_sha256": sha256(a.base),
        "query_sha256": sha256(qpath), "groundtruth_sha256": sha256(gpath),
        "ground_truth_seconds": round(gt_s, 1), "verified_queries": sorted(int(r) for r in vrows),
    }
    mpath = os.path.join(a.out, "manifest.json")
    with open(mpath, "w") as f:
        json.dump(man, f, indent=1)
    if a.copy_manifest:
        for p in (mpath, tpath, upath):
            with open(p, "rb") as src, open(os.path.join(a.copy_manifest, os.path.basename(p)), "wb") as dst:
                dst.write(src.read())
    print(f"wrote {qpath}, {gpath}, {mpath}, {tpath}, {upath}")


if __name__ == "__main__":
    main()
