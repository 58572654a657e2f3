#!/usr/bin/env bash
# The sweep set's one-thread curves (the issue asks for one curve per system and thread
# count): run.sh's sweeps with --threads 1, batches of 2,000, ROUNDS rounds (default 1),
# memrl (NEW), hnswlib and FAISS alternated, into m{100k,1m}_{memrl,hnsw,faiss}_t1.R.json.
#
#   NEW=... W=/tmp/f29 ROUNDS=1 bash bench/batch/final29b/run_t1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
D=${D:-/work/shared/data/sift1m-deb}; B=${B:-/tmp/ivfbatch-bench}; W=${W:-/tmp/f29}
O=${O:-bench/batch/final29b}; R=${ROUNDS:-1}
L=$O/loadavg.log
log() { echo "$1 $(date -u +%T) $(cat /proc/loadavg)" >> $L; }
C1="--base $D/base.bvecs --query $D/query.bvecs --gt $B/gt100k.ivecs --nbase 100000 --nq 2000"
M1="--index-dir $W/ix100k --reuse-index --nprobe 6,8,10,12,14,16,20,24,32,40,48,64 --refine 6,8,10,12,16,20,24"
C2="--base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000"
M2="--nprobe 16,24,32,40,48,56,64,80,96,112,128,160,192,256 --refine 8,12,16,20,24,32,40,48"
T="--threads 1 --batch 2000"
for r in $(seq $R); do
  log "100k $r memrl t1"; $NEW bench ann $C1 $M1 $T --json $O/m100k_memrl_t1.$r.json > /dev/null
  log "100k $r hnsw t1"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C1 --index-cache $B/hnsw100k.bin \
    --ef 10,16,20,24,26,28,30,32,40,48,56,64,72,80,96,112,128 $T --json $O/m100k_hnsw_t1.$r.json > /dev/null
  log "100k $r faiss t1"; OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/faiss/faiss_ann.py $C1 --learn $D/learn.bvecs \
    --train-size 100000 --nlist 1024 --pqm 32 --pqbits 8 --nprobe 4,8,16,32,64,128 --refine 8 $T \
    --index-cache $B/faiss100k.bin --json $O/m100k_faiss_t1.$r.json > /dev/null
  log "1m $r memrl t1"; $NEW bench ann $C2 --index-dir $W/ix1m --reuse-index $M2 $T --json $O/m1m_memrl_t1.$r.json > /dev/null
  log "1m $r hnsw t1"; /usr/bin/python3 bench/hnsw/hnsw_ann.py $C2 --index-cache /tmp/m29/hnsw1m.bin \
    --ef 16,24,32,40,44,48,56,64,72,80,96,112,128,144,160,192,256 $T --json $O/m1m_hnsw_t1.$r.json > /dev/null
  log "1m $r faiss t1"; OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/faiss/faiss_ann.py $C2 --learn $D/learn.bvecs \
    --train-size 100000 --nlist 4096 --pqm 32 --pqbits 8 --refine 8 --index-cache $W/faiss1m.bin \
    --nprobe 8,16,32,64,128,256 $T --json $O/m1m_faiss_t1.$r.json > /dev/null
done
log end-t1
