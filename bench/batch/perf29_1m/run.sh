#!/usr/bin/env bash
set -uo pipefail
cd /work/wt/perf29
D=/work/shared/data/sift1m-deb; B=/tmp/ivfbatch-bench; O=/tmp/p29/m/b1m; mkdir -p $O
NEW=/tmp/p29/memrl-r4; OLD=/tmp/p29/memrl-base
C="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000"
M="--index-dir $B/ix --reuse-index --nprobe 16,24,32,40,48,64,96,128,192,256 --refine 8,16,24,32,48"
L=$O/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
for r in 1 2 3; do
  log "round $r memrl"; $NEW bench ann $C $M --threads 2 --batch 2000 --json $O/memrl_t2_b2000.$r.json > /dev/null
  log "round $r hnsw"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C --index-cache /tmp/m29/hnsw1m.bin --ef 16,24,32,40,48,64,80,96,128,160,192,256 \
    --threads 2 --batch 2000 --json $O/hnsw_t2_b2000.$r.json > /dev/null
  log "round $r memrl-main"; $OLD bench ann $C $M --threads 2 --batch 2000 --json $O/memrlmain_t2_b2000.$r.json > /dev/null
  if [ -s /tmp/p29/f1m/faiss1m.bin ]; then
    log "round $r faiss"; /usr/bin/python3 bench/faiss/faiss_ann.py $C --learn $D/learn.bvecs --train-size 200000 --nlist 4096 --pqm 32 --pqbits 8 \
      --nprobe 8,16,32,64,128,256 --refine 8 --threads 2 --batch 2000 --index-cache /tmp/p29/f1m/faiss1m.bin --json $O/faiss_t2_b2000.$r.json > /dev/null
  fi
done
log end-batch
S="--index-dir $B/ix --reuse-index --nprobe 32,96 --refine 16"
for r in 1 2; do
  log "single $r main"; $OLD bench ann $C $S --threads 1 --json $O/single_main.$r.json > /dev/null
  log "single $r new"; $NEW bench ann $C $S --threads 1 --json $O/single_new.$r.json > /dev/null
  log "single $r newmap"; $NEW bench ann $C $S --map-files --threads 1 --json $O/single_newmap.$r.json > /dev/null
done
log end-single
