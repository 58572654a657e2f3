#!/usr/bin/env bash
# Compares memrl's PING throughput with a real redis-server's, side by side
# on loopback, with redis-benchmark (Debian's redis-tools) as the client.
#
#   bench/ping/compare.sh            # from the repository root
#
# Environment (defaults in parentheses):
#   ROUNDS (5)        rounds; each round runs memrl and redis once per pipeline
#                     depth, alternating which goes first, so that the
#                     machine's noise hits both alike
#   CLIENTS (50)      redis-benchmark -c
#   REQUESTS (200000) redis-benchmark -n without pipelining
#   REQUESTS_PIPELINED (2000000) redis-benchmark -n with -P > 1: enough for
#                     a run of a few seconds, since short runs are the
#                     noisiest
#   PIPELINES ("1 16") redis-benchmark -P values
#   MEMRL_PORT (16390), REDIS_PORT (16379)
#   MEMRL_BIN         a built memrl binary; by default one is built into a
#                     temporary folder with `go build ./cmd/memrl`
#   MEMRL_GOMAXPROCS  GOMAXPROCS of the memrl server (default: Go's, one per
#                     core). redis-server runs its commands on one thread;
#                     1 compares like with like, and keeps memrl from
#                     winning only by taking more of a shared machine
#
# Both servers run without durability work on the PING path: memrl with
# --sync none, redis with --save '' --appendonly no. The script starts them,
# and its EXIT trap stops them and removes the temporary folder whatever
# happens. All traffic stays on 127.0.0.1.
#
# Output: one line per run (raw requests/s), then a table per test and
# pipeline depth: requests/s min/median/max for each server, and the
# memrl/redis ratio of each round (the two runs of a round are adjacent in
# time) as min/median/max.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-200000}
REQUESTS_PIPELINED=${REQUESTS_PIPELINED:-2000000}
PIPELINES=${PIPELINES:-"1 16"}
MEMRL_PORT=${MEMRL_PORT:-16390}
REDIS_PORT=${REDIS_PORT:-16379}

for tool in redis-server redis-benchmark redis-cli; do
	command -v "$tool" >/dev/null || { echo "compare.sh: $tool not found (apt-get install redis-server redis-tools)" >&2; exit 2; }
done
for port in "$MEMRL_PORT" "$REDIS_PORT"; do
	if redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; then
		echo "compare.sh: something already answers on 127.0.0.1:$port; set MEMRL_PORT/REDIS_PORT" >&2
		exit 2
	fi
done

tmp=$(mktemp -d)
mpid=
rpid=
cleanup() {
	# Stop only the two processes this script started, by pid.
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null && wait "$mpid" 2>/dev/null || true
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin=${MEMRL_BIN:-}
if [ -z "$bin" ]; then
	bin=$tmp/memrl
	GOFLAGS=-mod=mod go build -o "$bin" ./cmd/memrl
fi

if [ -n "${MEMRL_GOMAXPROCS:-}" ]; then
	export GOMAXPROCS=$MEMRL_GOMAXPROCS
fi
"$bin" serve --dir "$tmp/data" --addr "127.0.0.1:$MEMRL_PORT" --sync none >"$tmp/memrl.log" 2>&1 &
mpid=$!
unset GOMAXPROCS
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize no --logfile "$tmp/redis.log" &
rpid=$!

waitup() { # port pid name
	for _ in $(seq 1 200); do
		redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG && return 0
		kill -0 "$2" 2>/dev/null || { echo "compare.sh: $3 exited at start" >&2; cat "$tmp/$3.log" >&2; exit 1; }
		sleep 0.05
	done
	echo "compare.sh: $3 did not answer PING on port $1" >&2
	exit 1
}
waitup "$MEMRL_PORT" "$mpid" memrl
waitup "$REDIS_PORT" "$rpid" redis

echo "# $(date -u +%FT%TZ) $(redis-benchmark --version) $(redis-server --version | cut -d' ' -f1-3)"
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); memrl GOMAXPROCS=${MEMRL_GOMAXPROCS:-default}; -c $CLIENTS -n $REQUESTS (pipelined: $REQUESTS_PIPELINED), $ROUNDS rounds"
echo "# raw: round server pipeline test requests/s"

raw=$tmp/raw
: >"$raw"
run() { # round server port pipeline
	local n=$REQUESTS
	[ "$4" -gt 1 ] && n=$REQUESTS_PIPELINED
	# --csv prints "test","rps",...; keep the first two fields.
	redis-benchmark -h 127.0.0.1 -p "$3" -c "$CLIENTS" -n "$n" -P "$4" -t ping --csv |
		tr -d '"' | awk -F, -v r="$1" -v s="$2" -v p="$4" '$1 ~ /^PING/ { print r, s, p, $1, $2 }' |
		tee -a "$raw"
}
for round in $(seq 1 "$ROUNDS"); do
	for p in $PIPELINES; do
		if [ $((round % 2)) -eq 1 ]; then
			run "$round" memrl "$MEMRL_PORT" "$p"
			run "$round" redis "$REDIS_PORT" "$p"
		else
			run "$round" redis "$REDIS_PORT" "$p"
			run "$round" memrl "$MEMRL_PORT" "$p"
		fi
	done
	kill -0 "$mpid" 2>/dev/null || { echo "compare.sh: memrl died" >&2; cat "$tmp/memrl.log" >&2; exit 1; }
done

# stats prints "min median max" of the numbers on stdin (one a line).
stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "- - -"; exit }
		med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s\n", v[1], med, v[NR] }'
}

echo
printf "%-12s %3s | %-28s | %-28s | %-17s\n" test P "memrl req/s min/med/max" "redis req/s min/med/max" "memrl/redis ratio"
for test in PING_INLINE PING_MBULK; do
	for p in $PIPELINES; do
		m=$(awk -v t="$test" -v p="$p" '$2 == "memrl" && $3 == p && $4 == t { print $5 }' "$raw" | stats)
		r=$(awk -v t="$test" -v p="$p" '$2 == "redis" && $3 == p && $4 == t { print $5 }' "$raw" | stats)
		# Pair the two servers' runs of the same round.
		q=$(awk -v t="$test" -v p="$p" '$3 == p && $4 == t { v[$1 " " $2] = $5; rounds[$1] = 1 }
			END { for (k in rounds) if (v[k " redis"] > 0) printf "%.3f\n", v[k " memrl"] / v[k " redis"] }' "$raw" | stats)
		read -r m1 m2 m3 <<<"$m"
		read -r r1 r2 r3 <<<"$r"
		read -r q1 q2 q3 <<<"$q"
		printf "%-12s %3s | %8.0f %9.0f %9.0f | %8.0f %9.0f %9.0f | %5s %5.3f %5s\n" \
			"$test" "$p" "$m1" "$m2" "$m3" "$r1" "$r2" "$r3" "$q1" "$q2" "$q3"
	done
done
