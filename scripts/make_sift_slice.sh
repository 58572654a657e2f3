#!/bin/sh
# make_sift_slice.sh [SIFT_DIR]: writes engine/testdata/sift20k/, the slice of
# the sift1m-deb set that the engine's SIFT recall tests read (the first
# 20,000 base vectors and the first 100 queries, TEXMEX .bvecs: each vector
# a little-endian int32 128 then 128 uint8), so that the tests pass in a
# clone with nothing beside it. SIFT_DIR defaults to the shared copy beside
# the repository (../shared/data/sift1m-deb); its README says how the set
# is made from Debian's packages. The slice is checked against the sums
# committed with it (sha256sum -c).
set -eu
cd "$(dirname "$0")/.."
src=${1:-../shared/data/sift1m-deb}
out=engine/testdata/sift20k
mkdir -p "$out"
rec=$((4 + 128))
head -c $((20000 * rec)) "$src/base.bvecs" > "$out/base.bvecs"
head -c $((100 * rec)) "$src/query.bvecs" > "$out/query.bvecs"
(cd "$out" && sha256sum -c SHA256SUMS)
