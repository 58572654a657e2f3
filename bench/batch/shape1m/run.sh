#!/usr/bin/env bash
# Index shape at 1M (issue 29): memrl's default IVF2048,PQ52x4 against other shapes, hnswlib and
# FAISS IVF-PQ, 2 threads, batches of 2,000, the engines alternated by round. Builds first (each once,
# under nice; reused afterwards), then ROUNDS rounds of the sweeps. Reproduce from the project root:
#   BIN=/tmp/shape/memrl OUT=/tmp/shape/res ROUNDS=3 bash bench/batch/shape1m/run.sh
# then: bench/batch/shape1m/shape_ratios.py [--cpu] $OUT ix2048_t2_b2000 ix4096_t2_b2000 ix1024_t2_b2000 ix2048m64_t2_b2000 hnsw_t2_b2000 faiss_t2_b2000
# Shapes: IVF2048,PQ52x4 (the default), IVF4096,PQ52x4, IVF1024,PQ52x4, IVF2048,PQ64x4 (32-byte codes).
# IX2048 is the index the earlier 1M tables used (bench/batch/perf29_1m: memrl's default shape, trained
# on 204,800 vectors sampled from the base); if missing it is built here the same way.
set -uo pipefail
D=${D:-/work/shared/data/sift1m-deb}
BIN=${BIN:-/tmp/shape/memrl}; OUT=${OUT:-/tmp/shape/res}; W=${W:-/tmp/shape}; ROUNDS=${ROUNDS:-3}
IX2048=${IX2048:-/tmp/ivfbatch-bench/ix}; HNSW=${HNSW:-/tmp/m29/hnsw1m.bin}
mkdir -p $OUT
C="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000"
L=$OUT/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }

# Builds (one at a time; the time of each is in its log and the index directory's build_s).
build() { # NAME NLIST PQM: $W/NAME, PQ PQMx4, trained on 204,800 vectors sampled from the base
  [ -s $W/$1/ivfpq.idx ] && return
  mkdir -p $W/$1; log "build $1"
  nice -n 10 $BIN bench ann $C --nlist $2 --pqm $3 --pqbits 4 --train-size 204800 --threads 2 --index-dir $W/$1 \
    --nprobe 32 --refine 16 > $W/$1_build.log 2>&1
}
[ -s $IX2048/ivfpq.idx ] || { build ix2048 2048 52; IX2048=$W/ix2048; }
build ix4096 4096 52
build ix1024 1024 52
build ix2048m64 2048 64
FAISS="--learn $D/learn.bvecs --train-size 100000 --nlist 4096 --pqm 32 --pqbits 8 --refine 8 --index-cache $W/faiss1m.bin"
if [ ! -s $W/faiss1m.bin ]; then
  log "build faiss"
  OMP_WAIT_POLICY=PASSIVE nice -n 10 /usr/bin/python3 bench/faiss/faiss_ann.py $C $FAISS --nprobe 16 \
    --threads 2 --batch 2000 > $W/faiss1m_build.log 2>&1
fi

M2048="--index-dir $IX2048 --reuse-index --nprobe 16,24,32,40,48,64,96,128,192,256 --refine 8,16,24,32,48"
M4096="--index-dir $W/ix4096 --nlist 4096 --reuse-index --nprobe 24,32,48,64,80,96,128,192,256,384 --refine 8,16,24,32,48"
M2048M64="--index-dir $W/ix2048m64 --pqm 64 --reuse-index --nprobe 16,24,32,40,48,64,96,128,192,256 --refine 8,16,24,32,48"
M1024="--index-dir $W/ix1024 --nlist 1024 --reuse-index --nprobe 8,12,16,24,32,48,64,96,128,192 --refine 8,16,24,32,48"
for r in $(seq 1 $ROUNDS); do
  log "round $r ix2048"; $BIN bench ann $C $M2048 --threads 2 --batch 2000 --json $OUT/ix2048_t2_b2000.$r.json > /dev/null
  log "round $r ix4096"; $BIN bench ann $C $M4096 --threads 2 --batch 2000 --json $OUT/ix4096_t2_b2000.$r.json > /dev/null
  log "round $r ix1024"; $BIN bench ann $C $M1024 --threads 2 --batch 2000 --json $OUT/ix1024_t2_b2000.$r.json > /dev/null
  log "round $r ix2048m64"; $BIN bench ann $C $M2048M64 --threads 2 --batch 2000 --json $OUT/ix2048m64_t2_b2000.$r.json > /dev/null
  log "round $r hnsw"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C --index-cache $HNSW \
    --ef 16,24,32,40,48,64,80,96,128,160,192,256 --threads 2 --batch 2000 --json $OUT/hnsw_t2_b2000.$r.json > /dev/null
  log "round $r faiss"; OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/faiss/faiss_ann.py $C $FAISS \
    --nprobe 8,16,32,64,128,256 --threads 2 --batch 2000 --json $OUT/faiss_t2_b2000.$r.json > /dev/null
done
log end
