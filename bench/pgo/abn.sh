#!/usr/bin/env bash
# Alternates memrl builds on one batch-search setting at 1M and gives each
# build's QPS and CPU a query over the first's, as the medians of per-round
# ratios. Each round runs every build once (REPS repetitions of the setting
# in one process), in an order rotated from round to round.
#
#   bash bench/pgo/abn.sh ROUNDS NPROBE REFINE REPS BIN_BASE BIN...
#
# IX: a `memrl bench ann --index-dir` folder of the 1M base (default
# /tmp/f29/ix1m); D: the sift1m-deb folder; OUT: the rows (round, build,
# QPS, CPU µs a query).
set -euo pipefail
R=$1 NPV=$2 RF=$3 N=$4
shift 4
bins=("$@")
D=${D:-/work/shared/data/sift1m-deb}
IX=${IX:-/tmp/f29/ix1m}
OUT=${OUT:-/tmp/abn.txt}
np=$(python3 -c "import sys; print(','.join([sys.argv[1]]*int(sys.argv[2])))" "$NPV" "$N")
: > "$OUT"
k=${#bins[@]}
for i in $(seq "$R"); do
	for j in $(seq 0 $((k - 1))); do
		b=${bins[$(((i + j) % k))]}
		"$b" bench ann --base "$D/base.bvecs" --query "$D/query.bvecs" --gt "$D/groundtruth.ivecs" \
			--nq 2000 --index-dir "$IX" --reuse-index --nprobe "$np" --refine "$RF" \
			--threads 2 --batch 2000 2>/dev/null |
			awk -v r="$i" -v b="$(basename "$b")" '/^IVF/{print r, b, $10, $12}' >> "$OUT"
	done
done
python3 - "$OUT" "${bins[@]}" <<'PY'
import collections, os, statistics as st, sys
rows, names = sys.argv[1], [os.path.basename(b) for b in sys.argv[2:]]
d = collections.defaultdict(lambda: collections.defaultdict(lambda: ([], [])))
for line in open(rows):
    r, n, q, c = line.split()
    d[r][n][0].append(float(q))
    d[r][n][1].append(float(c))
base = names[0]
for b in names[1:]:
    for what, i in (("QPS", 0), ("CPU", 1)):
        x = [st.median(d[r][b][i]) / st.median(d[r][base][i]) for r in d]
        q = st.quantiles(x, n=4)
        print(f"{b}/{base} {what}: median {st.median(x):.3f} (quartiles {q[0]:.3f}-{q[2]:.3f}, {len(x)} rounds)")
PY
