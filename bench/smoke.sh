#!/bin/sh
# Runs every benchmark of bench/README.md's "Programs" table once with
# small flags, to prove that each still runs (not to measure anything):
#
#   bench/smoke.sh [OUTDIR]
#
# Covers ann, rewards, durability, madd, filter, maintain, loop, cluster,
# hostile, serverann and the Python and shell tools; the issue-26 programs
# (txstall, filterhog, smallcolls, authflood, compactstall) need a running
# server and are not covered. SIFT-reading programs use the 20,000-vector
# slice committed under engine/testdata/sift20k (its exact ground truth is
# written into OUTDIR by bench/hnsw/prefix_gt.py), so nothing beside the
# repository is needed. Python peers come from Debian (the scripts apt-get
# them when missing); SKIP_PY=1 leaves out the Python and redis steps, and
# without redis-server and redis-benchmark the PING comparison and
# redis_bench.sh are skipped, saying so. Each step is bounded by `timeout`;
# the script stops at the first failure and names it. About 10 minutes on 2
# loaded cores. Run from the repository root.
set -eu
out=${1:-/tmp/memrl-smoke}
mkdir -p "$out"
s=engine/testdata/sift20k
go build -o "$out/memrl" ./cmd/memrl
m="$out/memrl"
step() {
	name=$1
	shift
	printf '%-28s' "$name"
	if timeout 600 "$@" >"$out/$name.log" 2>&1; then
		echo ok
	else
		echo "FAILED (log: $out/$name.log)"
		exit 1
	fi
}
step ann "$m" bench ann --synthetic 20000 --dim 32 --nq 200 --json "$out/ann.json"
step rewards "$m" bench rewards --clients 1,8 --duration 1s --memories 1000
mkdir -p "$out/dur"
step durability "$m" bench durability --dir "$out/dur" --recovery 1000 --checkpoint-memories 1000 --duration 200ms
step madd "$m" bench madd --memories 20000 --dim 32 --batch 100
step filter "$m" bench filter --data "$s" --nbase 20000 --nq 10 --dir "$out/filter"
step maintain "$m" bench maintain --base "$s/base.bvecs" --query "$s/query.bvecs" --n 20000 --nq 50 \
	--duration 1s --writers-idle 1s --dir "$out/maint"
step loop "$m" bench loop --short --out "$out/loop.md"
step cluster "$m" bench cluster --clients 1 --duration 1s --failovers 1 --sharded=false --memories 1000
step hostile "$m" bench hostile --spawn --quiet 1s --duration 3s
if [ "${SKIP_PY:-0}" != 1 ]; then
	step prefix_gt /usr/bin/python3 bench/hnsw/prefix_gt.py --base "$s/base.bvecs" --query "$s/query.bvecs" \
		--nbase 20000 --nq 100 --out "$out/gt20k.ivecs"
	step serverann "$m" bench serverann --base "$s/base.bvecs" --query "$s/query.bvecs" --gt "$out/gt20k.ivecs" \
		--nq 100 --clients 2 --duration 2s --dir "$out/sa"
	step compare_hnsw env SKIP_FAISS=1 HNSW_EF=16,64 bench/faiss/compare.sh "$out/cmp" --base "$s/base.bvecs" \
		--query "$s/query.bvecs" --gt "$out/gt20k.ivecs" --nprobe 8,16 --refine 8
	step rounds env DATA="$s" QSET="$s" NBASE=20000 NQ=100 CPU= bench/hnsw/rounds.sh "$out/rounds" 1
	step ann100k env DATA="$s" NBASE=20000 NQ=100 bench/results/ann100k.sh "$out/a100k" 1
	step plot /usr/bin/python3 bench/results/plot.py --out "$out/img"
	if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
		step redis_bench env REQUESTS=20000 PIPELINES=8 bench/rewards/redis_bench.sh "$m" 16391
		step ping env ROUNDS=1 REQUESTS=20000 REQUESTS_PIPELINED=200000 MEMRL_BIN="$m" bench/ping/compare.sh
	else
		echo "ping                        skipped: apt-get install redis-server redis-tools"
	fi
fi
echo "all ran; logs in $out"
