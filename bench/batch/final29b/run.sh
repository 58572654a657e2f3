#!/usr/bin/env bash
# Issue 29, the second closing set: one build of main (NEW) against main before this
# session's work (OLD, 5cad5cb), hnswlib and FAISS, alternated by round, batches of 2,000,
# 2,000 held-out queries, k=10; at 1M also the IVF2048,PQ64x4 shape. Wall clock and CPU time
# are both recorded. Inputs are copies of the cached indexes (W), never written. THREADS=1
# runs the one-thread curves instead (memrl NEW, hnswlib and FAISS, into *_t1 files).
#
#   NEW=... OLD=... W=/tmp/f29 ROUNDS=3 bash bench/batch/final29b/run.sh
#   NEW=... W=/tmp/f29 ROUNDS=1 THREADS=1 bash bench/batch/final29b/run.sh
#   bench/batch/final29/ratios.py bench/batch/final29b
#   OLDLABEL='memrl 5cad5cb' bash bench/batch/final29/plot.sh bench/batch/final29b
set -uo pipefail
cd "$(dirname "$0")/../../.."
D=${D:-/work/shared/data/sift1m-deb}; B=${B:-/tmp/ivfbatch-bench}; W=${W:-/tmp/f29}
O=${O:-bench/batch/final29b}; R=${ROUNDS:-3}
L=$O/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
C1="--base $D/base.bvecs --query $D/query.bvecs --gt $B/gt100k.ivecs --nbase 100000 --nq 2000"
M1="--index-dir $W/ix100k --reuse-index --nprobe 6,8,10,12,14,16,20,24,32,40,48,64 --refine 6,8,10,12,16,20,24"
C2="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000"
M2="--nprobe 16,24,32,40,48,56,64,80,96,112,128,160,192,256 --refine 8,12,16,20,24,32,40,48"
TH=${THREADS:-2}; T="--threads $TH --batch 2000"
S=""; [ "$TH" != 2 ] && S="_t$TH"   # the file suffix of other thread counts
# two: the PQ64x4 shape and, when OLD is set, the build before, at 2 threads only
two() { [ "$TH" = 2 ]; }
old() { two && [ -n "${OLD:-}" ]; }
for r in $(seq $R); do
  log "100k $r memrl$S"; $NEW bench ann $C1 $M1 $T --json $O/m100k_memrl$S.$r.json > /dev/null
  log "100k $r hnsw$S"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C1 --index-cache $B/hnsw100k.bin \
    --ef 10,16,20,24,26,28,30,32,40,48,56,64,72,80,96,112,128 $T --json $O/m100k_hnsw$S.$r.json > /dev/null
  old && log "100k $r memrl-old" && $OLD bench ann $C1 $M1 $T --json $O/m100k_memrlold.$r.json > /dev/null
  log "100k $r faiss$S"; OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/faiss/faiss_ann.py $C1 --learn $D/learn.bvecs \
    --train-size 100000 --nlist 1024 --pqm 32 --pqbits 8 --nprobe 4,8,16,32,64,128 --refine 8 $T \
    --index-cache $B/faiss100k.bin --json $O/m100k_faiss$S.$r.json > /dev/null
done
for r in $(seq $R); do
  log "1m $r memrl$S"; $NEW bench ann $C2 --index-dir $W/ix1m --reuse-index $M2 $T --json $O/m1m_memrl$S.$r.json > /dev/null
  log "1m $r hnsw$S"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C2 --index-cache /tmp/m29/hnsw1m.bin \
    --ef 16,24,32,40,44,48,56,64,72,80,96,112,128,144,160,192,256 $T --json $O/m1m_hnsw$S.$r.json > /dev/null
  two && log "1m $r memrl-pq64" && $NEW bench ann $C2 --index-dir $W/ix2048m64 --reuse-index --pqm 64 --pqbits 4 $M2 $T --json $O/m1m_memrlpq64.$r.json > /dev/null
  old && log "1m $r memrl-old" && $OLD bench ann $C2 --index-dir $W/ix1m --reuse-index $M2 $T --json $O/m1m_memrlold.$r.json > /dev/null
  log "1m $r faiss$S"; OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/faiss/faiss_ann.py $C2 --learn $D/learn.bvecs \
    --train-size 100000 --nlist 4096 --pqm 32 --pqbits 8 --refine 8 --index-cache $W/faiss1m.bin \
    --nprobe 8,16,32,64,128,256 $T --json $O/m1m_faiss$S.$r.json > /dev/null
done
log end$S
