#!/usr/bin/env bash
# The same with the window rerankAhead at 4 (new), 8, 16 and 2: memrl-newN is this branch built with
# `const rerankAhead = N` in ivfpq/search.go; alternated, 3 rounds.
# (shares of the samples under ivfpq.(*Index).batchChunk without asyncPreempt's, as profile.sh).
set -uo pipefail
cd /work/wt/rerank
D=/work/shared/data/sift1m-deb; B=/tmp/ivfbatch-bench; W=/tmp/rr29; O=bench/batch/rerank_1m
C100="--base $D/base.bvecs --query $D/query.bvecs --gt $B/gt100k.ivecs --nbase 100000 --nq 2000 --index-dir $W/ix100k --reuse-index"
C1M="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000 --index-dir $W/ix1m --reuse-index"
T="--threads 2 --batch 2000"
for r in 1 2 3; do
  for e in main new new8 new16 new2; do
    $W/memrl-$e bench ann $C100 $T --nprobe 24,24,24,24,24,24,24,24,24,24 --refine 8 --cpuprofile $W/w100k_$e.$r.prof > /dev/null
    $W/memrl-$e bench ann $C1M $T --nprobe 192,192,192,192,192,192 --refine 32 --cpuprofile $W/w1m192_$e.$r.prof > /dev/null
  done
done
for p in w100k w1m192; do
  for e in main new new8 new16 new2; do
    for r in 1 2 3; do
      f=$W/${p}_$e.$r.prof
      all=$(go tool pprof -top -nodefraction=0 -nodecount=100000 -ignore asyncPreempt -focus 'batchChunk' $W/memrl-$e $f 2>/dev/null | awk '/Showing nodes accounting/ {print $5}')
      rr=$(go tool pprof -top -nodefraction=0 -nodecount=100000 -ignore asyncPreempt -focus 'rerankCands|prefetchRows|nextCands' $W/memrl-$e $f 2>/dev/null | awk '/Showing nodes accounting/ {print $5}')
      echo "$p $e $r batchChunk=$all rerank=$rr"
    done
  done
done
