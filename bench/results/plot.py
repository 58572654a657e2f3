#!/usr/bin/python3
"""Draw docs/BENCHMARKS.md's plots from the results committed beside this file.

Usage (from the repository root; Debian's python3-matplotlib, installed with
apt-get if missing):

    /usr/bin/python3 bench/results/plot.py [--out docs/img]

Inputs, all in bench/results/ (each names the run it comes from):

- ann100k/*_r1.json: `memrl bench ann --json` and bench/hnsw/hnsw_ann.py
  --json of round 1 of one alternated run (bench/results/ann100k.sh made
  them; drawn by thread CPU time per query, as the machine was loaded);
- ann1m_faiss.txt, ann1m_hnsw.txt: rows of bench/faiss/side_by_side.py's
  first table (engine index nprobe refine R@1 R@10 QPS p99_us build_s
  index_MB), copied from the runs docs/BENCHMARKS.md names;
- serverann.tsv: `memrl bench serverann`'s rows (phase, clients, p50, p99,
  max in ms) of the run docs/BENCHMARKS.md names;
- filter_crossover.tsv: `memrl bench filter --crossover`'s rows (allowed
  share, exact µs, index µs, auto µs);
- compactstall_1m.tsv: bench/compactstall's p99 and maximum per command
  during a compaction of 1M, before and after issue 26.

Recall-QPS plots are drawn as ann-benchmarks draws them: recall@10 on x, QPS
(one query per call, one thread) on a log y axis, each engine's Pareto
frontier (no other setting of it has both more recall and more QPS) as a
line, every setting as a faint dot.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def ensure_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("installing python3-matplotlib from Debian", file=sys.stderr)
        subprocess.check_call(["apt-get", "install", "-y", "python3-matplotlib"])


ensure_matplotlib()
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"memrl": "tab:blue", "hnswlib": "tab:orange", "faiss": "tab:green"}


def read_side_by_side(path):
    """Rows of side_by_side.py's first table, as the JSON's fields."""
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 10 or p[0] not in COLORS:
                continue
            rows.append({"engine": p[0], "index": p[1], "nprobe": int(p[2]), "refine": int(p[3]),
                         "recall10": float(p[5]), "qps": float(p[6])})
    return rows


def read_tsv(path):
    with open(path) as f:
        lines = [ln.rstrip("\n").split("\t") for ln in f if ln.strip() and not ln.startswith("#")]
    head, body = lines[0], lines[1:]
    return [dict(zip(head, r)) for r in body]


def frontier(points):
    """The Pareto frontier of (recall, qps): sorted by recall, QPS falling."""
    pts = sorted(points, key=lambda p: (-p[0], -p[1]))
    out, best = [], -1.0
    for r, q in pts:
        if q > best:
            out.append((r, q))
            best = q
    return sorted(out)


def recall_qps(rows, title, path, xmin, by_cpu=False):
    """by_cpu: y is queries per CPU-second of the search thread (1e6 / cpu_us),
    which a loaded machine disturbs far less than wall-clock QPS."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = {}
    for r in rows:
        label = "%s %s" % (r["engine"], r["index"])
        y = 1e6 / r["cpu_us"] if by_cpu else r["qps"]
        groups.setdefault(label, []).append((r["recall10"], y))
    styles = ["-", "--", ":", "-."]
    seen = {}
    for label in sorted(groups):
        eng = label.split()[0]
        ls = styles[seen.get(eng, 0) % len(styles)]
        seen[eng] = seen.get(eng, 0) + 1
        pts = [p for p in groups[label] if p[0] >= xmin]
        if not pts:
            continue
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, alpha=0.3, color=COLORS[eng])
        fr = frontier(pts)
        ax.plot([p[0] for p in fr], [p[1] for p in fr], ls, marker="o", ms=4, color=COLORS[eng], label=label)
    ax.set_yscale("log")
    ax.set_xlabel("recall@10")
    ax.set_ylabel("queries per CPU-second (1 thread, 1 query per call)" if by_cpu
                  else "queries per second (1 thread, 1 query per call)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def serverann(rows, title, path):
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
    for ax, clients in zip(axes, ("1", "8")):
        # The in-process row beside 8 clients runs 2 goroutines (one a core).
        sel = [r for r in rows if (r["clients"] == "1") == (clients == "1")]
        names = [r["phase"] for r in sel]
        x = range(len(sel))
        w = 0.27
        for i, (key, col) in enumerate((("p50_ms", "tab:blue"), ("p99_ms", "tab:orange"), ("max_ms", "tab:red"))):
            ax.bar([v + (i - 1) * w for v in x], [float(r[key]) for r in sel], w, label=key[:-3], color=col)
        ax.set_xticks(list(x))
        ax.set_xticklabels([n.replace(", ", "\n") for n in names], fontsize=8)
        ax.set_yscale("log")
        ax.set_title("1 client" if clients == "1" else "8 clients (in process: 2 goroutines)", fontsize=10)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel("MEM.RETRIEVE latency (ms)")
    axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def crossover(rows, title, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    share = [float(r["allowed_pct"]) for r in rows]
    for key, label, col in (("exact_us", "exact scan of the allowed rows", "tab:green"),
                            ("index_us", "index (IVF-PQ, NPROBE/sqrt(share))", "tab:purple"),
                            ("auto_us", "the engine's choice", "tab:blue")):
        ax.plot(share, [float(r[key]) for r in rows], marker="o", label=label, color=col)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("allowed rows (% of 1M)")
    ax.set_ylabel("µs per query")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def compactstall(rows, title, path):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    cmds = [r["command"] for r in rows if r["build"] == "before"]
    w = 0.2
    bars = (("before", "p99_ms", "#f4a582"), ("before", "max_ms", "#ca0020"),
            ("after", "p99_ms", "#92c5de"), ("after", "max_ms", "#0571b0"))
    for i, (build, key, col) in enumerate(bars):
        vals = [float(next(r for r in rows if r["build"] == build and r["command"] == c)[key]) for c in cmds]
        ax.bar([x + (i - 1.5) * w for x in range(len(cmds))], vals, w, color=col,
               label="%s, %s" % (build, key[:-3]))
    ax.set_xticks(range(len(cmds)))
    ax.set_xticklabels(cmds)
    ax.set_yscale("log")
    ax.set_ylabel("latency during the compaction (ms)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="docs/img")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    made = []

    rows = []
    # Round 1 of the committed run; every round's JSON is kept beside it.
    for p in sorted(glob.glob(os.path.join(HERE, "ann100k", "*_r1.json"))):
        with open(p) as f:
            rows.extend(json.load(f))
    if rows:
        out = os.path.join(args.out, "recall_qps_100k.png")
        recall_qps(rows, "sift1m-deb, first 100k base, 2,000 held-out queries, k=10 (bench/results/ann100k.sh)",
                   out, 0.8, by_cpu=True)
        made.append(out)
    for name, title in (("ann1m_faiss.txt", "1M sift1m-deb, memrl against FAISS 1.7.3 (generic build), 5,000 queries"),
                        ("ann1m_hnsw.txt", "1M sift1m-deb, memrl against hnswlib 0.6.2 (M=16, efC=200), 2,000 queries")):
        p = os.path.join(HERE, name)
        if os.path.exists(p):
            out = os.path.join(args.out, "recall_qps_" + name.replace(".txt", ".png").replace("ann", ""))
            recall_qps(read_side_by_side(p), title, out, 0.5 if "faiss" in name else 0.8)
            made.append(out)
    p = os.path.join(HERE, "serverann.tsv")
    if os.path.exists(p):
        out = os.path.join(args.out, "serverann_latency.png")
        serverann(read_tsv(p), "MEM.RETRIEVE through the server, 1M, default settings (recall@10 0.967-0.970)", out)
        made.append(out)
    p = os.path.join(HERE, "filter_crossover.tsv")
    if os.path.exists(p):
        out = os.path.join(args.out, "filter_crossover.png")
        crossover(read_tsv(p), "Filtered phase 1 on 1M: exact scan against the index by selectivity", out)
        made.append(out)
    p = os.path.join(HERE, "compactstall_1m.tsv")
    if os.path.exists(p):
        out = os.path.join(args.out, "compaction_latency.png")
        compactstall(read_tsv(p), "Other clients during a compaction of 1M memories (MEM.ADD writes to it)", out)
        made.append(out)
    for m in made:
        print(m)


if __name__ == "__main__":
    main()
