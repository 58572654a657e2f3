#!/bin/sh
# Runs memrl's ANN benchmark and FAISS's on the same files with the same
# nlist/M/bits and prints the two side by side.
#
#   bench/faiss/compare.sh OUTDIR --base F --query F --gt F [--learn F] \
#       --nlist N --pqm M --pqbits 4|8 --nprobe 16,32,... --refine 4,8,... [--nq N]
#
# Every flag after OUTDIR is passed to both sides unchanged (faiss_ann.py
# accepts the same names). Results land in OUTDIR/{memrl,faiss}.{json,log}.
# Run from the repository root. FAISS runs on Debian's /usr/bin/python3.
set -eu
out=$1
shift
mkdir -p "$out"
here=$(dirname "$0")
go build -o "$out/annbench" ./bench/ann/cmd/annbench
"$out/annbench" "$@" --json "$out/memrl.json" | tee "$out/memrl.log"
/usr/bin/python3 "$here/faiss_ann.py" "$@" --json "$out/faiss.json" | tee "$out/faiss.log"
echo
echo "FAISS: Debian python3-faiss $(/usr/bin/python3 -c 'import faiss; print(faiss.__version__)'), a generic build (no AVX2);"
echo "its IVFPQFastScan aborts when asked for many neighbours (k=100, or inside a refine), so 4-bit FAISS runs without re-ranking."
/usr/bin/python3 "$here/side_by_side.py" "$out/memrl.json" "$out/faiss.json"
