#!/bin/sh
# Acknowledged MEM.REWARDs per second from a C client: redis-benchmark
# against a `memrl serve` it starts, the measurement behind
# docs/BENCHMARKS.md "Durable rewards":
#
#   bench/rewards/redis_bench.sh BIN [PORT]
#
# BIN is a `go build -o BIN ./cmd/memrl`. Starts BIN serve on 127.0.0.1:PORT
# (default 6390) over a fresh temporary folder with --sync $SYNC (default
# always), creates collection b (DIM 4, INDEX FLAT, so that no index build
# runs meanwhile) holding 10,000 memories with ids 0..9999, then for each
# pipeline depth in PIPELINES (default "1 4 8 16") runs
#   redis-benchmark -p PORT -c 64 -P DEPTH -n REQUESTS -r 10000 MEM.REWARD b 1 __rand_int__
# (REQUESTS default 1000000; -r 10000 draws ids 0..9999) and prints its
# CSV line: requests/s and latency (avg, min, p50, p95, p99, max, ms), one
# reply per reward. The
# server is stopped on exit. Needs Debian's redis-tools.
set -eu
bin=$1
port=${2:-6390}
command -v redis-benchmark >/dev/null || { echo "redis_bench.sh: apt-get install redis-tools" >&2; exit 2; }
dir=$(mktemp -d)
"$bin" serve --dir "$dir/data" --addr "127.0.0.1:$port" --sync "${SYNC:-always}" >"$dir/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT INT TERM
i=0
until redis-cli -p "$port" PING >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -gt 200 ]; then
		echo "redis_bench.sh: the server did not answer within 20 s:" >&2
		cat "$dir/serve.log" >&2
		exit 1
	fi
	sleep 0.1
done
redis-cli -p "$port" MEM.CREATE b DIM 4 METRIC L2 INDEX FLAT >/dev/null
# Ten MEM.MADDs of 1,000 memories each, ids 0..9999.
awk 'BEGIN { for (b = 0; b < 10; b++) { printf "MEM.MADD b";
	for (i = b * 1000; i < (b + 1) * 1000; i++) printf " VALUES 4 %d 1 0 0 ID %d", i % 97, i; printf "\n" } }' |
	redis-cli -p "$port" >/dev/null
n=$(redis-cli -p "$port" MEM.COUNT b)
[ "$n" = 10000 ] || { echo "redis_bench.sh: collection b holds $n memories, want 10000" >&2; exit 1; }
# redis-benchmark does not read its replies; check once that such a reward
# (a zero-padded id, as __rand_int__ writes it) is taken, not refused.
r=$(redis-cli -p "$port" MEM.REWARD b 1 000000001234)
case $r in
[0-9.-]*) ;;
*) echo "redis_bench.sh: MEM.REWARD b 1 000000001234 answered: $r" >&2; exit 1 ;;
esac
echo "memrl serve --sync ${SYNC:-always}, 10000 memories; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for p in ${PIPELINES:-1 4 8 16}; do
	echo "== -c 64 -P $p"
	redis-benchmark -p "$port" -c 64 -P "$p" -n "${REQUESTS:-1000000}" -r 10000 --csv \
		MEM.REWARD b 1 __rand_int__
done
