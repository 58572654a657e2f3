#!/bin/sh
# Alternated rounds of memrl against hnswlib at 1M, the measurement behind
# docs/BENCHMARKS.md "Phase 1 against hnswlib":
#
#   bench/hnsw/rounds.sh OUTDIR [ROUNDS]
#
# Builds memrl into OUTDIR, then builds once (and reuses on later calls)
# memrl's default index for the data (`memrl bench ann` with no shape
# flags, kept in OUTDIR/ix) and hnswlib's graph (M=16, efConstruction=200,
# OUTDIR/hnsw.bin; about 5 minutes on 2 quiet cores at 1M, 20 on loaded
# ones). Each round (default 3) runs six lines, each a memrl sweep and then
# an hnswlib sweep around one recall@10 target (0.95, 0.99, 0.995) on the
# set's own queries ("shared") and, when QSET names a folder holding
# bench/queryset/make_queries.py's query.bvecs and groundtruth.ivecs, on
# those ("unlike"). Both run one query per call on one thread, pinned to
# vCPU $CPU (default 0; CPU= leaves them unpinned). Every sweep writes its
# JSON (OUTDIR/rN/LINE.memrl.json, .hnswlib.json); at the end
# bench/hnsw/rounds_summary.py prints, per line and round, each engine's
# least thread CPU time per query reaching the target and hnswlib's over
# memrl's (> 1: memrl needs less). Ratios are taken within a round because
# a shared machine moves both engines' figures by 1.3-2x between rounds.
#
# Environment: DATA (default ../shared/data/sift1m-deb, see
# bench/README.md "Data"), QSET (unset: shared lines only), NQ (queries,
# default 10000), NBASE (0: the whole base; otherwise a prefix, whose exact
# ground truth bench/hnsw/prefix_gt.py writes into OUTDIR: for a quick
# check that the script runs, e.g. NBASE=20000 NQ=200). Run from the
# repository root; hnswlib runs on Debian's /usr/bin/python3.
set -eu
out=$1
rounds=${2:-3}
mkdir -p "$out"
data=${DATA:-../shared/data/sift1m-deb}
nq=${NQ:-10000}
nbase=${NBASE:-0}
pin=""
if [ -n "${CPU-0}" ] && command -v taskset >/dev/null; then
	pin="taskset -c ${CPU-0}"
fi
go build -o "$out/memrl" ./cmd/memrl

sgt="$data/groundtruth.ivecs"
ugt="${QSET:-}/groundtruth.ivecs"
if [ "$nbase" != 0 ]; then
	# The sets' ground truth is for the whole base; a prefix needs its own.
	sgt="$out/gt_shared_$nbase.ivecs"
	[ -f "$sgt" ] || /usr/bin/python3 bench/hnsw/prefix_gt.py --base "$data/base.bvecs" \
		--query "$data/query.bvecs" --nbase "$nbase" --nq "$nq" --out "$sgt"
	if [ -n "${QSET:-}" ]; then
		ugt="$out/gt_unlike_$nbase.ivecs"
		[ -f "$ugt" ] || /usr/bin/python3 bench/hnsw/prefix_gt.py --base "$data/base.bvecs" \
			--query "$QSET/query.bvecs" --nbase "$nbase" --nq "$nq" --out "$ugt"
	fi
fi
common="--base $data/base.bvecs --nq $nq --nbase $nbase"
S="--query $data/query.bvecs --gt $sgt"
U="--query ${QSET:-}/query.bvecs --gt $ugt"

# memrl LINE SET FLAGS… / hnsw LINE SET FLAGS…: one sweep, its JSON kept.
memrl() {
	line=$1 set=$2
	shift 2
	# shellcheck disable=SC2086
	$pin "$out/memrl" bench ann $common $set --index-dir "$out/ix" --reuse-index "$@" \
		--json "$dir/$line.memrl.json" >"$dir/$line.memrl.log"
}
hnsw() {
	line=$1 set=$2
	shift 2
	# shellcheck disable=SC2086
	$pin /usr/bin/python3 bench/hnsw/hnsw_ann.py $common $set \
		--index-cache "$out/hnsw.bin" "$@" --json "$dir/$line.hnswlib.json" >"$dir/$line.hnswlib.log"
}

# The indexes, once: memrl's on 2 threads (no pinning), hnswlib's likewise.
if [ ! -f "$out/ix/build_s" ]; then
	# shellcheck disable=SC2086
	"$out/memrl" bench ann $common $S --index-dir "$out/ix" --nprobe 32 --refine 8 >"$out/ix_build.log"
fi
if [ ! -f "$out/hnsw.bin" ]; then
	# shellcheck disable=SC2086
	/usr/bin/python3 bench/hnsw/hnsw_ann.py $common $S --index-cache "$out/hnsw.bin" --ef 32 >"$out/hnsw_build.log"
fi

r=1
while [ "$r" -le "$rounds" ]; do
	dir="$out/r$r"
	mkdir -p "$dir"
	echo "round $r: $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
	memrl shared_0.95 "$S" --nprobe 36,40,48,56,64 --refine 10,12 --prune 1,0.5,0.4,0.35,0.3
	hnsw shared_0.95 "$S" --ef 40,44,48
	memrl shared_0.99 "$S" --nprobe 112,128,160 --refine 32,40 --prune 1,0.5,0.4
	hnsw shared_0.99 "$S" --ef 112,128,144
	memrl shared_0.995 "$S" --nprobe 160,192,256 --refine 48,64 --prune 1,0.5
	hnsw shared_0.995 "$S" --ef 192,256
	if [ -n "${QSET:-}" ]; then
		memrl unlike_0.95 "$U" --nprobe 32,40,48,56 --refine 8,10 --prune 1,0.5,0.4,0.35,0.3
		hnsw unlike_0.95 "$U" --ef 48,56,64
		memrl unlike_0.99 "$U" --nprobe 96,112,128 --refine 12,16 --prune 1,0.5,0.4
		hnsw unlike_0.99 "$U" --ef 128,144,160
		memrl unlike_0.995 "$U" --nprobe 128,160,192 --refine 24,32 --prune 1,0.5
		hnsw unlike_0.995 "$U" --ef 192,256
	fi
	r=$((r + 1))
done
/usr/bin/python3 bench/hnsw/rounds_summary.py "$out"
