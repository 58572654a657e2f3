#!/usr/bin/env bash
# Replicated write throughput (issue 28, item 4): 8 clients pipelining
# MEM.ADD of 16 dimensions at depth 1, 4 and 32, with redis-benchmark,
# against a standalone node, the leader of a 2-shard x 1 cluster and the
# leader of a 2-shard x 3 cluster, all on this machine's loopback. The
# setups are alternated ROUNDS times so that a drift of the shared
# machine's speed hits them alike. Prints one CSV row per run:
#   round,setup,binary,depth,adds_per_s,p50_ms,p99_ms
#
# usage: bench/replwrite/run.sh [ROUNDS] MEMRL_BINARY [MEMRL_BINARY2 ...]
#   (several binaries, e.g. before and after a change, are alternated too)
# env: PORT (first client port, default 7400; raft ports are 10000 above),
#      CLIENTS (8), N1 N4 N32 (requests per run at each depth).
set -euo pipefail
rounds=${1:-3}
shift
[ $# -ge 1 ] || { echo "usage: $0 [ROUNDS] MEMRL_BINARY..." >&2; exit 2; }
port=${PORT:-7400}
clients=${CLIENTS:-8}
declare -A nreq=([1]=${N1:-3000} [4]=${N4:-8000} [32]=${N32:-30000})
vec="VALUES 16 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.1 1.2 1.3 1.4 1.5 1.6"
work=$(mktemp -d)
pids=()
cdir="" cbin="" # the cluster running, if any
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	if [ -n "$cdir" ]; then "$cbin" cluster stop --dir "$cdir" --timeout 5s >/dev/null 2>&1 || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# leader_port BASE COUNT: the port, among COUNT nodes from BASE, that
# accepts a write to the collection "bench".
leader_port() {
	local base=$1 count=$2 deadline=$((SECONDS + 60)) p
	while [ $SECONDS -lt $deadline ]; do
		for ((p = base; p < base + count; p++)); do
			if redis-cli -p "$p" MEM.ADD bench $vec 2>/dev/null | grep -qE '^[0-9]+$'; then
				echo "$p"
				return
			fi
		done
		sleep 0.2
	done
	echo "no leader for bench" >&2
	return 1
}

# run ROUND SETUP BIN PORT: the three depths against PORT.
run() {
	local d out
	for d in 1 4 32; do
		out=$(redis-benchmark -p "$4" -c "$clients" -P "$d" -n "${nreq[$d]}" --csv MEM.ADD bench $vec | tail -1)
		# "test","rps","avg","min","p50","p95","p99","max"
		echo "$out" | tr -d '"' | awk -F, -v r="$1" -v s="$2" -v b="$3" -v d="$d" \
			'{printf "%s,%s,%s,%s,%.0f,%.3f,%.3f\n", r, s, b, d, $2, $5, $7}'
	done
}

echo "round,setup,binary,depth,adds_per_s,p50_ms,p99_ms"
for ((r = 1; r <= rounds; r++)); do
	for bin in "$@"; do
		name=$bin
		# standalone
		dir=$work/s; rm -rf "$dir"
		"$bin" serve --addr 127.0.0.1:$port --dir "$dir" >"$work/s.log" 2>&1 &
		pids+=($!)
		spid=$!
		for _ in $(seq 100); do redis-cli -p $port PING >/dev/null 2>&1 && break; sleep 0.1; done
		redis-cli -p $port MEM.CREATE bench DIM 16 >/dev/null
		run "$r" standalone "$name" $port
		kill "$spid"; wait "$spid" 2>/dev/null || true
		for reps in 1 3; do
			dir=$work/c; rm -rf "$dir"
			cdir=$dir cbin=$bin
			"$bin" cluster start --dir "$dir" --shards 2 --replicas $reps --port $((port + 10)) >"$work/c.log" 2>&1
			redis-cli -c -p $((port + 10)) MEM.CREATE bench DIM 16 >/dev/null
			lp=$(leader_port $((port + 10)) $((2 * reps)))
			run "$r" "2x$reps" "$name" "$lp"
			"$bin" cluster stop --dir "$dir" >/dev/null 2>&1
			cdir=""
		done
	done
done
