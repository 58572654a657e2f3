#!/usr/bin/env bash
# One query a call (no --batch): two memrl builds alternated by process at
# 1M, nprobe 48, refine 8, ROUNDS rounds of 5 sweeps of the 2,000 queries
# each; prints each build's median mean latency, CPU and p99 a query over
# all sweeps. Issue 29's "single-query latency unchanged".
#
#   bash bench/batch/paired/single.sh BIN_OLD BIN_NEW [ROUNDS] > single.txt
#
# IX: a `memrl bench ann --index-dir` folder of the 1M base (default
# /tmp/f29/ix1m); D: the sift1m-deb folder.
set -euo pipefail
old=$1 new=$2 rounds=${3:-6}
D=${D:-/work/shared/data/sift1m-deb}
IX=${IX:-/tmp/f29/ix1m}
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for _ in $(seq "$rounds"); do
	for b in "$old" "$new"; do
		"$b" bench ann --base "$D/base.bvecs" --query "$D/query.bvecs" --gt "$D/groundtruth.ivecs" \
			--nq 2000 --index-dir "$IX" --reuse-index --nprobe 48,48,48,48,48 --refine 8 2>/dev/null |
			awk -v b="$(basename "$b")" '/^IVF/{print b, $11, $12, $13}' >> "$rows"
	done
done
python3 - "$rows" <<'PY'
import collections, statistics as st, sys
d = collections.defaultdict(lambda: ([], [], []))
for line in open(sys.argv[1]):
    n, mean, cpu, p99 = line.split()
    for i, v in enumerate((mean, cpu, p99)):
        d[n][i].append(float(v))
for n, (mean, cpu, p99) in d.items():
    print(f"{n:14s} mean_us med {st.median(mean):6.1f} (min {min(mean):.1f} max {max(mean):.1f})"
          f"  cpu_us med {st.median(cpu):6.1f}  p99_us med {st.median(p99):7.1f}  n={len(mean)}")
PY
