#!/usr/bin/env bash
# 1M, one query per call on one thread: main (d2c2769) and new in ABBA order (new first in even rounds), 6 rounds,
# each setting 3 times a run: run.sh's single-query part always ran main first.
# NEW=binary P=prefix: another build (abba2_*: new with scan4 restored to main's code).
set -uo pipefail
cd /work/wt/fastscan
D=/work/shared/data/sift1m-deb; W=/tmp/fs29; O=bench/batch/fastscan_1m
NEW=${NEW:-$W/memrl-new}; OLD=$W/memrl-main; P=${P:-abba}
C="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000"
S="--index-dir $W/ix1m --reuse-index --nprobe 32,96,32,96,32,96 --refine 16 --threads 1 --batch 1"
L=$O/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then order="main new"; else order="new main"; fi
  for v in $order; do
    B=$OLD; [ $v = new ] && B=$NEW
    log "$P $r $v"; $B bench ann $C $S --json $O/${P}_$v.$r.json > /dev/null
  done
done
log end-$P
