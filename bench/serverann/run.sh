#!/bin/sh
# One command for the issue-13 report: phase 1 through the server on the
# 1M SIFT set, then the same with the server on one processor and the load
# generator on another (on a machine of two, the clients otherwise share
# the server's cores, and the switches between them cost the server more
# than its own work: bench/README.md "Per core through the server").
#
#   bench/serverann/run.sh OUTDIR [extra `memrl bench serverann` flags]
#
# Builds memrl into OUTDIR, runs `memrl bench serverann` on
# ../shared/data/sift1m-deb (DATA=… to change) with GOMAXPROCS left to Go
# (all cores) and then, unless ONE_PROC=0, with --server-gomaxprocs 1
# --server-cpus 0 --client-cpus 1 (CPUS_SERVER, CPUS_CLIENT to change).
# Each run's table is in OUTDIR/serverann[-pinned].log and its rows in
# the .json beside it. A run takes about 10 minutes on 2 cores (fill, builds,
# restart, in process). Run from the repository root, on a quiet machine.
set -eu
out=$1
shift
mkdir -p "$out"
data=${DATA:-../shared/data/sift1m-deb}
go build -o "$out/memrl" ./cmd/memrl
set -- --base "$data/base.bvecs" --query "$data/query.bvecs" --gt "$data/groundtruth.ivecs" \
	--nq 2000 --clients 8 --duration 10s "$@"
"$out/memrl" bench serverann "$@" --json "$out/serverann.json" | tee "$out/serverann.log"
if [ "${ONE_PROC:-1}" != 0 ]; then
	"$out/memrl" bench serverann "$@" --server-gomaxprocs 1 --server-cpus "${CPUS_SERVER:-0}" \
		--client-cpus "${CPUS_CLIENT:-1}" --json "$out/serverann-pinned.json" | tee "$out/serverann-pinned.log"
fi
