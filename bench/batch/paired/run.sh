#!/usr/bin/env bash
# Issue 29, the paired set: each engine timed at the fastest setting that reaches each
# recall target (README.md beside this script says how they were chosen), that setting
# repeated REPS times in one process, the engines alternated within each round. On a VM
# whose speed moves ±30% over minutes, a sweep of every setting puts each engine's best
# point in a different minute; here both engines' points share each round, and the
# medians over many rounds decide. Output: one JSON file per engine, target and round
# (bench ann's and hnsw_ann.py's), in O.
#
#   SIZE=1m   NEW=./memrl [OLD=/path/to/memrl-before] ROUNDS=8 REPS=10 O=out1m  bash bench/batch/paired/run.sh
#   SIZE=100k NEW=./memrl [OLD=...]                   ROUNDS=8 REPS=10 O=out100k bash bench/batch/paired/run.sh
#   bench/batch/paired/ratios.py out1m
set -uo pipefail
cd "$(dirname "$0")/../../.."
D=${D:-/work/shared/data/sift1m-deb}; W=${W:-/tmp/f29}; B=${B:-/tmp/ivfbatch-bench}
O=${O:-bench/batch/paired/out}; R=${ROUNDS:-8}; N=${REPS:-10}; SIZE=${SIZE:-1m}
mkdir -p "$O"
rep() { python3 -c "import sys; print(','.join([sys.argv[1]]*int(sys.argv[2])))" "$1" "$N"; }
C="--base $D/base.bvecs --query $D/query.bvecs --nq 2000 --threads 2 --batch 2000"
case $SIZE in
1m)   # IVF2048,PQ52x4 and HNSW16,efC200 over the 1M base
  C="$C --gt $D/groundtruth.ivecs"; IX=$W/ix1m; HNSW=${HNSW:-/tmp/m29/hnsw1m.bin}
  M95="--nprobe $(rep 48) --refine 8"; M99="--nprobe $(rep 160) --refine 32"
  H95=$(rep 44); H99=$(rep 128) ;;
100k) # IVF512,PQ52x4 and HNSW16,efC200 over the first 100,000
  C="$C --gt $B/gt100k.ivecs --nbase 100000"; IX=$W/ix100k; HNSW=${HNSW:-$B/hnsw100k.bin}
  M95="--nprobe $(rep 24) --refine 6"; M99="--nprobe $(rep 64) --refine 12"
  H95=$(rep 28); H99=$(rep 72) ;;
*) echo "SIZE must be 1m or 100k" >&2; exit 2 ;;
esac
for r in $(seq $R); do
  echo "$SIZE round $r $(date -u +%T) $(cat /proc/loadavg)" >> $O/loadavg.log
  for t in 95 99; do
    M=M$t; H=H$t
    $NEW bench ann $C --index-dir $IX --reuse-index ${!M} --json $O/memrl$t.$r.json > /dev/null
    /usr/bin/python3 bench/hnsw/hnsw_ann.py $C --index-cache $HNSW --ef ${!H} --json $O/hnsw$t.$r.json > /dev/null
    [ -n "${OLD:-}" ] && $OLD bench ann $C --index-dir $IX --reuse-index ${!M} --json $O/old$t.$r.json > /dev/null
  done
done
echo "end $(date -u +%T) $(cat /proc/loadavg)" >> $O/loadavg.log
