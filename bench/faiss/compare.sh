#!/bin/sh
# Runs memrl's ANN benchmark, FAISS's and hnswlib's on the same files with
# the same flags and prints the three side by side.
#
#   bench/faiss/compare.sh OUTDIR --base F --query F --gt F [--learn F] [--nbase N] \
#       --nlist N --pqm M --pqbits 4|8 --nprobe 16,32,... --refine 4,8,... [--nq N]
#
# Every flag after OUTDIR is passed to every engine unchanged (faiss_ann.py
# and bench/hnsw/hnsw_ann.py accept the same names; hnswlib ignores the
# IVF-PQ ones and sweeps ef instead: HNSW_EF, default 16,32,64,128,256,512,
# with M=16, efConstruction=200). Results land in
# OUTDIR/{memrl,faiss,hnswlib}.{json,log}. SKIP_FAISS=1 or SKIP_HNSW=1 leaves
# an engine out (hnswlib builds 1M vectors in about 6 minutes on 2 cores).
# Run from the repository root. FAISS and hnswlib run on Debian's
# /usr/bin/python3.
set -eu
out=$1
shift
mkdir -p "$out"
here=$(dirname "$0")
go build -o "$out/annbench" ./bench/ann/cmd/annbench
"$out/annbench" "$@" --json "$out/memrl.json" | tee "$out/memrl.log"
files="$out/memrl.json"
if [ "${SKIP_FAISS:-0}" != 1 ]; then
	/usr/bin/python3 "$here/faiss_ann.py" "$@" --json "$out/faiss.json" | tee "$out/faiss.log"
	files="$files $out/faiss.json"
fi
if [ "${SKIP_HNSW:-0}" != 1 ]; then
	/usr/bin/python3 "$here/../hnsw/hnsw_ann.py" "$@" --ef "${HNSW_EF:-16,32,64,128,256,512}" \
		--json "$out/hnswlib.json" | tee "$out/hnswlib.log"
	files="$files $out/hnswlib.json"
fi
echo
if [ "${SKIP_FAISS:-0}" != 1 ]; then
	echo "FAISS: Debian python3-faiss $(/usr/bin/python3 -c 'import faiss; print(faiss.__version__)'), a generic build (no AVX2);"
	echo "its IVFPQFastScan aborts when asked for many neighbours (k=100, or inside a refine), so 4-bit FAISS runs without re-ranking."
fi
# shellcheck disable=SC2086
/usr/bin/python3 "$here/side_by_side.py" $files
