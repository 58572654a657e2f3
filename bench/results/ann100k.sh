#!/bin/sh
# memrl's default index against hnswlib on the first 100k vectors of
# sift1m-deb, alternated, for docs/BENCHMARKS.md's recall-QPS plot:
#
#   bench/results/ann100k.sh OUTDIR [ROUNDS]
#
# Writes the exact ground truth of the prefix (bench/hnsw/prefix_gt.py),
# then ROUNDS times (default 2) a memrl sweep (`memrl bench ann` with no
# shape flags: the engine's default index for 100k, rebuilt each round) and
# an hnswlib sweep (M=16, efConstruction=200, its graph built in the first
# round and reused), one query per call on one thread, each round's JSON in
# OUTDIR/{memrl,hnswlib}_rN.json and bench/faiss/side_by_side.py's table in
# OUTDIR/side_by_side_rN.txt. To redraw the plot from a new run, copy the
# JSON files into bench/results/ann100k/ and run bench/results/plot.py.
# DATA (default ../shared/data/sift1m-deb), NBASE (100000), NQ (2000).
# About 5 minutes on 2 quiet cores. Run from the repository root.
set -eu
out=$1
rounds=${2:-2}
mkdir -p "$out"
data=${DATA:-../shared/data/sift1m-deb}
nbase=${NBASE:-100000}
nq=${NQ:-2000}
go build -o "$out/memrl" ./cmd/memrl
gt="$out/gt_$nbase.ivecs"
[ -f "$gt" ] || /usr/bin/python3 bench/hnsw/prefix_gt.py --base "$data/base.bvecs" \
	--query "$data/query.bvecs" --nbase "$nbase" --nq "$nq" --out "$gt"
set -- --base "$data/base.bvecs" --query "$data/query.bvecs" --gt "$gt" --nbase "$nbase" --nq "$nq"
r=1
while [ "$r" -le "$rounds" ]; do
	echo "round $r: $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
	"$out/memrl" bench ann "$@" --nprobe 8,12,16,24,32,48,64,96,128 --refine 8,16 \
		--json "$out/memrl_r$r.json" >"$out/memrl_r$r.log"
	/usr/bin/python3 bench/hnsw/hnsw_ann.py "$@" --index-cache "$out/hnsw_$nbase.bin" \
		--ef 10,16,24,32,48,64,96,128,256 --json "$out/hnswlib_r$r.json" >"$out/hnswlib_r$r.log"
	/usr/bin/python3 bench/faiss/side_by_side.py "$out/memrl_r$r.json" "$out/hnswlib_r$r.json" |
		tee "$out/side_by_side_r$r.txt"
	r=$((r + 1))
done
