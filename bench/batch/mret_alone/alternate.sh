#!/usr/bin/env bash
# Alternated rounds of bench/mretrieve (16 clients × MEM.MRETRIEVE of 64
# against RetrieveBatch of 2,000 on 2 threads) for two memrl builds on the
# same folder: each round runs BIN_BEFORE, then BIN_AFTER, one 5 s server
# row and one in-process row each, so every build's ratio is measured side
# by side with its own in-process figure (docs/BENCHMARKS.md "Through the
# server").
#
#   bench/batch/mret_alone/alternate.sh DIR BIN_BEFORE BIN_AFTER [ROUNDS] > out.log
#
# DIR holds DIR/data (filled by a first bench/mretrieve run; use a copy,
# the runs write checkpoints). MRBENCH: the bench/mretrieve binary
# (default: built to /tmp/mrbench). D: the SIFT1M folder.
set -euo pipefail
dir=$1 before=$2 after=$3 rounds=${4:-5}
D=${D:-/work/shared/data/sift1m-deb}
mr=${MRBENCH:-/tmp/mrbench}
here=$(cd "$(dirname "$0")/../../.." && pwd)
[ -x "$mr" ] || (cd "$here" && go build -o "$mr" ./bench/mretrieve)
for r in $(seq "$rounds"); do
	for b in before after; do
		bin=$before
		[ "$b" = after ] && bin=$after
		echo "### round $r $b $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%H:%M:%S)"
		"$mr" --bin "$bin" --dir "$dir" --base "$D/base.bvecs" --query "$D/query.bvecs" \
			--gt "$D/groundtruth.ivecs" --duration 5s --rounds 1 --inproc-batch 2000 2>&1
	done
done
