#!/usr/bin/env bash
# Batched retrieval side by side (issue 29): memrl (ivfpq.SearchBatch),
# hnswlib (knn_query on a matrix) and FAISS IVF-PQ (search on a matrix),
# each on THREADS threads in batches of BATCH, ROUNDS rounds alternating
# the engines, then the plot and tables (plot_batch.py).
#
#   bench/batch/run.sh MEMRL_BIN OUT_DIR [NBASE] [ROUNDS]
#
# Data: ../shared/data/sift1m-deb (D below), the first NQ=2000 of its
# held-out queries (images the base never saw). NBASE < 1,000,000 takes a
# prefix of the base and writes its exact ground truth with
# bench/hnsw/prefix_gt.py. Indexes are built once into OUT_DIR and reused.
# Environment: THREADS (2), BATCH (2000), NQ (2000), and the sweeps
# NPROBE, REFINE (memrl), EF (hnswlib), FNPROBE (FAISS).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1"; out="$2"; nbase="${3:-1000000}"; rounds="${4:-3}"
D="${D:-$here/../../../shared/data/sift1m-deb}"
THREADS="${THREADS:-2}"; BATCH="${BATCH:-2000}"; NQ="${NQ:-2000}"
NPROBE="${NPROBE:-8,12,16,24,32,48,64,96}"; REFINE="${REFINE:-8,16}"
EF="${EF:-16,24,32,48,64,96,128,192,256}"; FNPROBE="${FNPROBE:-4,8,16,32,64,128}"
mkdir -p "$out"
gt="$D/groundtruth.ivecs"
if [ "$nbase" != 1000000 ]; then
  gt="$out/gt$nbase.ivecs"
  [ -f "$gt" ] || /usr/bin/python3 "$here/../hnsw/prefix_gt.py" --base "$D/base.bvecs" --query "$D/query.bvecs" \
    --nbase "$nbase" --nq "$NQ" --out "$gt"
fi
common=(--base "$D/base.bvecs" --query "$D/query.bvecs" --gt "$gt" --nbase "$nbase" --nq "$NQ" --threads "$THREADS")
for r in $(seq "$rounds"); do
  "$bin" bench ann "${common[@]}" --nprobe "$NPROBE" --refine "$REFINE" --batch "$BATCH" \
    --index-dir "$out/memrl.ix" --reuse-index --json "$out/memrl.$r.json"
  /usr/bin/python3 "$here/../hnsw/hnsw_ann.py" "${common[@]}" --ef "$EF" --batch "$BATCH" \
    --index-cache "$out/hnsw.bin" --json "$out/hnsw.$r.json"
  /usr/bin/python3 "$here/../faiss/faiss_ann.py" "${common[@]}" --learn "$D/learn.bvecs" --train-size 100000 \
    --nlist "${FNLIST:-1024}" --pqm 32 --pqbits 8 --nprobe "$FNPROBE" --refine 8 --batch "$BATCH" \
    --index-cache "$out/faiss.bin" --json "$out/faiss.$r.json"
done
/usr/bin/python3 "$here/plot_batch.py" "$out/recall_qps.png" "$out"/memrl.*.json "$out"/hnsw.*.json "$out"/faiss.*.json
