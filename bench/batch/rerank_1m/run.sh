#!/usr/bin/env bash
# Issue 29, the re-rank's prefetch window: 1M, 2 threads, batches of 2,000. memrl new (branch h-rerank),
# hnswlib, memrl main (8cbf935) alternated by round (no FAISS at 1M), 5 rounds; then one query per call on
# one thread, main and new alternated. Inputs: the cached indexes copied to /tmp/rr29.
set -uo pipefail
cd /work/wt/rerank
D=/work/shared/data/sift1m-deb; W=/tmp/rr29; O=bench/batch/rerank_1m
NEW=$W/memrl-new; OLD=$W/memrl-main
C="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000"
M="--index-dir $W/ix1m --reuse-index --nprobe 16,24,32,40,48,64,96,128,192,256 --refine 8,16,24,32,48"
L=$O/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
for r in 1 2 3 4 5; do
  log "round $r memrl"; $NEW bench ann $C $M --threads 2 --batch 2000 --json $O/memrl_t2_b2000.$r.json > /dev/null
  log "round $r hnsw"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C --index-cache /tmp/m29/hnsw1m.bin --ef 16,24,32,40,48,64,80,96,128,160,192,256 \
    --threads 2 --batch 2000 --json $O/hnsw_t2_b2000.$r.json > /dev/null
  log "round $r memrl-main"; $OLD bench ann $C $M --threads 2 --batch 2000 --json $O/memrlmain_t2_b2000.$r.json > /dev/null
done
log end-batch
S="--index-dir $W/ix1m --reuse-index --nprobe 32,96,32,96,32,96 --refine 16 --threads 1 --batch 1"
for r in 1 2 3 4 5; do
  log "single $r main"; $OLD bench ann $C $S --json $O/single_main.$r.json > /dev/null
  log "single $r new"; $NEW bench ann $C $S --json $O/single_new.$r.json > /dev/null
done
log end-single
