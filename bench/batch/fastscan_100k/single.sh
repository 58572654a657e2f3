#!/usr/bin/env bash
# 100k, one query per call on one thread: main (d2c2769) and new alternated, 5 rounds, each setting 3 times a run
# (run.sh's single-query part gave one pass per round: too few to read a few % through this machine's noise).
# NEW=binary P=prefix: another build (single3x2_*: the final build, Search's scan4 as main's; single3x_*: the build before).
set -uo pipefail
cd /work/wt/fastscan
D=/work/shared/data/sift1m-deb; B=/tmp/ivfbatch-bench; W=/tmp/fs29; O=bench/batch/fastscan_100k
NEW=${NEW:-$W/memrl-new}; OLD=$W/memrl-main; P=${P:-single3x}
C="--base $D/base.bvecs --query $D/query.bvecs --gt $B/gt100k.ivecs --nbase 100000 --nq 2000"
S="--index-dir $W/ix100k --reuse-index --nprobe 16,48,64,16,48,64,16,48,64 --refine 16 --threads 1 --batch 1"
L=$O/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
for r in 1 2 3 4 5; do
  log "$P $r main"; $OLD bench ann $C $S --json $O/${P}_main.$r.json > /dev/null
  log "$P $r new"; $NEW bench ann $C $S --json $O/${P}_new.$r.json > /dev/null
done
log end-$P
