#!/usr/bin/env bash
# Issue 29, the re-rank's prefetch window: 100k, 2 threads, batches of 2,000. memrl new (branch h-rerank),
# hnswlib, memrl main (8cbf935) and FAISS alternated by round, 5 rounds; then one query per call on one
# thread, main and new alternated. Inputs: the cached indexes copied to /tmp/rr29 (the caches are not written).
set -uo pipefail
cd /work/wt/rerank
D=/work/shared/data/sift1m-deb; B=/tmp/ivfbatch-bench; W=/tmp/rr29; O=bench/batch/rerank_100k
NEW=$W/memrl-new; OLD=$W/memrl-main
C="--base $D/base.bvecs --query $D/query.bvecs --gt $B/gt100k.ivecs --nbase 100000 --nq 2000"
M="--index-dir $W/ix100k --reuse-index --nprobe 6,8,10,12,16,20,24,32,48,64 --refine 8,12,16"
L=$O/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
for r in 1 2 3 4 5; do
  log "round $r memrl"; $NEW bench ann $C $M --threads 2 --batch 2000 --json $O/memrl_t2_b2000.$r.json > /dev/null
  log "round $r hnsw"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C --index-cache $B/hnsw100k.bin --ef 10,16,20,24,28,32,40,48,64,96,128 \
    --threads 2 --batch 2000 --json $O/hnsw_t2_b2000.$r.json > /dev/null
  log "round $r memrl-main"; $OLD bench ann $C $M --threads 2 --batch 2000 --json $O/memrlmain_t2_b2000.$r.json > /dev/null
  log "round $r faiss"; /usr/bin/python3 bench/faiss/faiss_ann.py $C --learn $D/learn.bvecs --train-size 100000 --nlist 1024 --pqm 32 --pqbits 8 \
    --nprobe 4,8,16,32,64,128 --refine 8 --threads 2 --batch 2000 --index-cache $B/faiss100k.bin --json $O/faiss_t2_b2000.$r.json > /dev/null
done
log end-batch
S="--index-dir $W/ix100k --reuse-index --nprobe 16,48,64,16,48,64 --refine 16 --threads 1 --batch 1"
for r in 1 2 3 4 5; do
  log "single $r main"; $OLD bench ann $C $S --json $O/single_main.$r.json > /dev/null
  log "single $r new"; $NEW bench ann $C $S --json $O/single_new.$r.json > /dev/null
done
log end-single
