#!/usr/bin/env bash
# Rounds 4 and 5 of bench/batch/shape1m (after run.sh's 1-3): the shapes that led in rounds 1-3,
# plus IVF1024,PQ64x4, in reversed order (so the default is no longer first in a round), FAISS
# and IVF1024,PQ52x4 left out to keep a round short. Same environment variables as run.sh.
set -uo pipefail
D=${D:-/work/shared/data/sift1m-deb}
BIN=${BIN:-/tmp/shape/memrl}; OUT=${OUT:-/tmp/shape/res}; W=${W:-/tmp/shape}
IX2048=${IX2048:-/tmp/ivfbatch-bench/ix}; HNSW=${HNSW:-/tmp/m29/hnsw1m.bin}
C="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000"
L=$OUT/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
if [ ! -s $W/ix1024m64/ivfpq.idx ]; then
  mkdir -p $W/ix1024m64; log "build ix1024m64"
  nice -n 10 $BIN bench ann $C --nlist 1024 --pqm 64 --pqbits 4 --train-size 204800 --threads 2 \
    --index-dir $W/ix1024m64 --nprobe 32 --refine 16 > $W/ix1024m64_build.log 2>&1
fi
R="--refine 8,16,24,32,48 --threads 2 --batch 2000"
for r in 4 5; do
  log "round $r ix1024m64"; $BIN bench ann $C --index-dir $W/ix1024m64 --nlist 1024 --pqm 64 --reuse-index \
    --nprobe 8,12,16,24,32,48,64,96,128,192 $R --json $OUT/ix1024m64_t2_b2000.$r.json > /dev/null
  log "round $r ix2048m64"; $BIN bench ann $C --index-dir $W/ix2048m64 --pqm 64 --reuse-index \
    --nprobe 16,24,32,40,48,64,96,128,192,256 $R --json $OUT/ix2048m64_t2_b2000.$r.json > /dev/null
  log "round $r hnsw"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C --index-cache $HNSW \
    --ef 16,24,32,40,48,64,80,96,128,160,192,256 --threads 2 --batch 2000 --json $OUT/hnsw_t2_b2000.$r.json > /dev/null
  log "round $r ix4096"; $BIN bench ann $C --index-dir $W/ix4096 --nlist 4096 --reuse-index \
    --nprobe 24,32,48,64,80,96,128,192,256,384 $R --json $OUT/ix4096_t2_b2000.$r.json > /dev/null
  log "round $r ix2048"; $BIN bench ann $C --index-dir $IX2048 --reuse-index \
    --nprobe 16,24,32,40,48,64,96,128,192,256 $R --json $OUT/ix2048_t2_b2000.$r.json > /dev/null
done
log end2
# The high-recall tail: FAISS's sweep reaches recall@10 0.9969 (nprobe 256, refine 8), past the
# default shape's 0.9942 at nprobe 256, refine 48; one run of larger refine factors to get there.
log "tail ix2048"; $BIN bench ann $C --index-dir $IX2048 --reuse-index --nprobe 192,256,384,512 --refine 64,96,128 \
  --threads 2 --batch 2000 --json $OUT/tail_ix2048_t2_b2000.1.json > /dev/null
log end-tail
# The coarse step's share at 2048 and 4096 lists (one setting near recall 0.95, six times each):
# go tool pprof -top -ignore asyncPreempt $BIN $OUT/cpu_ix2048_np48_rf8.prof
$BIN bench ann $C --index-dir $IX2048 --reuse-index --nprobe 48,48,48,48,48,48 --refine 8 --threads 2 --batch 2000 \
  --cpuprofile $OUT/cpu_ix2048_np48_rf8.prof > /dev/null
$BIN bench ann $C --index-dir $W/ix4096 --nlist 4096 --reuse-index --nprobe 64,64,64,64,64,64 --refine 8 --threads 2 \
  --batch 2000 --cpuprofile $OUT/cpu_ix4096_np64_rf8.prof > /dev/null
