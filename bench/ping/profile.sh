#!/usr/bin/env bash
# Profiles memrl's server under redis-benchmark's PING load: builds
# bench/ping/pingprof (the server code of `memrl serve --sync none`, in a
# harness that writes a CPU profile), loads it with redis-benchmark -t ping,
# and prints `go tool pprof -top`.
#
#   bench/ping/profile.sh [OUTDIR]     # from the repository root
#
# Environment: PIPELINE (16; redis-benchmark -P), CLIENTS (50), REQUESTS
# (2000000), PORT (16391), GOMAXPROCS (passed to the server if set). The
# profile and binary are kept in OUTDIR (default a temporary folder, printed)
# for further `go tool pprof` work. The EXIT trap stops the server.
set -euo pipefail

PIPELINE=${PIPELINE:-16}
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-2000000}
PORT=${PORT:-16391}
out=${1:-$(mktemp -d)}
mkdir -p "$out"

if redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then
	echo "profile.sh: something already answers on 127.0.0.1:$PORT; set PORT" >&2
	exit 2
fi
GOFLAGS=-mod=mod go build -o "$out/pingprof" ./bench/ping/pingprof

pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# A long --duration: the profile ends when the load is done (SIGINT below).
"$out/pingprof" --addr "127.0.0.1:$PORT" --cpuprofile "$out/cpu.pprof" --duration 10m 2>"$out/pingprof.log" &
pid=$!
for _ in $(seq 1 200); do
	redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG && break
	sleep 0.05
done
# -q still draws progress with carriage returns: keep the final lines.
redis-benchmark -h 127.0.0.1 -p "$PORT" -c "$CLIENTS" -n "$REQUESTS" -P "$PIPELINE" -t ping -q |
	tr '\r' '\n' | grep 'requests per second'
kill -INT "$pid"
wait "$pid" || true
pid=
echo "# profile: $out/cpu.pprof (binary $out/pingprof)"
go tool pprof -top -nodecount=35 "$out/pingprof" "$out/cpu.pprof" 2>/dev/null
