#!/usr/bin/env bash
# Writes the CPU profile that `go build` uses for profile-guided optimization
# of the memrl binary (cmd/memrl/default.pgo; bench/pgo/README.md says why
# and what it gained). The profile merges three workloads of `memrl bench
# ann` on this machine, so that the compiler sees where retrieval spends
# its time, batched (MEM.MRETRIEVE) and one query at a time (MEM.RETRIEVE):
#
#  1. batch search on 2 threads at 1M (IVF2048,PQ52x4, the default shape; 2,000 queries
#     a call): nprobe 48 refine 8 and nprobe 160 refine 32, the recall 0.95
#     and 0.99 settings of issue 29;
#  2. batch search at 100k (IVF512,PQ52x4): nprobe 24 and 64, refine 6 and 12;
#  3. one query a call at 1M, nprobe 48 refine 8, on one thread.
#
#   IX1M=/tmp/f29/ix1m IX100K=/tmp/f29/ix100k GT100K=/tmp/ivfbatch-bench/gt100k.ivecs \
#   bash bench/pgo/profile.sh
#
# IX1M and IX100K are `memrl bench ann --index-dir` folders (built there on
# the first run, about 10 minutes at 1M); GT100K the ground truth of the
# first 100,000 base vectors (bench/hnsw/prefix_gt.py). The binary is
# built with -pgo=off, so an existing default.pgo does not shape the
# profile that replaces it.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${D:-/work/shared/data/sift1m-deb}
W=${W:-/tmp/pgo}
mkdir -p "$W"
go build -pgo=off -o "$W/memrl" ./cmd/memrl
rep() { python3 -c "import sys; print(','.join([sys.argv[1]]*int(sys.argv[2])))" "$1" "$2"; }
C="--base $D/base.bvecs --query $D/query.bvecs --nq 2000"

"$W/memrl" bench ann $C --gt "$D/groundtruth.ivecs" --index-dir "$IX1M" --reuse-index \
	--threads 2 --batch 2000 --nprobe "$(rep 48 30)" --refine 8 --cpuprofile "$W/batch1m95.prof" > "$W/batch1m95.txt"
"$W/memrl" bench ann $C --gt "$D/groundtruth.ivecs" --index-dir "$IX1M" --reuse-index \
	--threads 2 --batch 2000 --nprobe "$(rep 160 10)" --refine 32 --cpuprofile "$W/batch1m99.prof" > "$W/batch1m99.txt"
"$W/memrl" bench ann $C --gt "$GT100K" --nbase 100000 --index-dir "$IX100K" --reuse-index \
	--threads 2 --batch 2000 --nprobe "$(rep 24 20),$(rep 64 10)" --refine 6,12 --cpuprofile "$W/batch100k.prof" > "$W/batch100k.txt"
"$W/memrl" bench ann $C --gt "$D/groundtruth.ivecs" --index-dir "$IX1M" --reuse-index \
	--nprobe "$(rep 48 10)" --refine 8 --cpuprofile "$W/single1m.prof" > "$W/single1m.txt"

go tool pprof -proto "$W"/batch1m95.prof "$W"/batch1m99.prof "$W"/batch100k.prof \
	"$W"/single1m.prof > cmd/memrl/default.pgo
echo "wrote cmd/memrl/default.pgo ($(wc -c < cmd/memrl/default.pgo) bytes)"
