#!/usr/bin/env bash
# The project's test command (README): installs what the tests need, then
# runs every package's tests. It must pass on a fresh machine by itself.
#
# The protocol tests drive the server with Debian's redis-cli and
# redis-benchmark (redis-tools), and check TLS with redis-py (python3-redis,
# under Debian's /usr/bin/python3); the Python client's tests and the agent
# loop example (clients/python, examples/python) need python3-numpy and
# python3-pytest too, and run in a venv the client is installed into as the
# README says (python3-venv; python3-wheel, which setuptools builds the
# wheel with). They are installed here with apt-get when missing (as root,
# or through sudo).
#
# Usage: bash scripts/test.sh [--race]
#
# Without flags every package runs once without the race detector (about
# 5 minutes on 2 cores): the command for a change. --race runs every
# package under the race detector instead, then the engine's crash sweeps
# whole and the allocation tests without it (9 min 13 s in CI on 2 cores,
# 2026-12-05; docs/TESTING.md, "CI's time"); CI (.ci/run) runs it that way.
set -euo pipefail
cd "$(dirname "$0")/.."

race=0
case "${1:-}" in
  "") ;;
  --race) race=1 ;;
  *) echo "usage: bash scripts/test.sh [--race]" >&2; exit 2 ;;
esac
export PATH="/usr/local/go/bin:$PATH"

debs="redis-tools python3-redis python3-numpy python3-pytest python3-venv python3-wheel"
# ensurepip is what python3-venv adds to Debian's python (venv needs it to put pip in).
if ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null ||
   ! /usr/bin/python3 -c 'import redis, numpy, pytest, ensurepip, wheel' 2>/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "test.sh: some of $debs are missing; install them with: apt-get install -y $debs" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  echo "test.sh: installing $debs with apt-get"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086 # one word a package
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $debs >/dev/null
fi

# step says when each step starts (seconds since the start).
step() { echo "-- test.sh: $1 (at ${SECONDS} s)"; }

# The tests build without cmd/memrl/default.pgo (profile-guided
# optimization, bench/pgo/README.md): with it, go test would compile all of
# cmd/memrl's dependencies once more, with the race detector and the
# profile, for that one package's tests; and the profile changes only how
# the compiler inlines, not what the code does. The memrl binaries built
# below, and by cmd/memrl's cluster tests, use it as a user's `go build`
# does (one build with the profile, without the race detector).
step "go test"
if [ "$race" = 1 ]; then
  go test -pgo=off -race -count=1 -timeout 20m ./...
  # The engine's crash sweeps check fewer points under the race detector
  # (engine/sweep_test.go): here they run whole, without it. They are the
  # tests that call shortSweep() in their own function.
  sweeps=$(awk '/^func / { name = "" } /^func Test/ { name = $2; sub(/\(.*/, "", name) }
    /shortSweep\(\)/ && !/^func shortSweep/ { print (name != "" ? name : "outside a test in " FILENAME) }' engine/*_test.go | sort -u)
  if [ -z "$sweeps" ] || grep -q '^outside' <<<"$sweeps"; then
    echo "test.sh: shortSweep() must be called in a test's own function: ${sweeps:-none found}" >&2
    exit 1
  fi
  # Allocation counts mean nothing under -race (sync.Pool drops a random
  # quarter of its Puts there, so pooled scratch is re-allocated): the
  # tests that hold a search to its allocations run once more without it,
  # in the same go test as the sweeps (their packages build side by side).
  step "the engine's crash sweeps whole and the allocation tests, without the race detector"
  go test -pgo=off -count=1 -run "^($(paste -sd '|' <<<"$sweeps"))\$|Allocations|DoNotAllocate" ./engine ./ivfpq ./simd
else
  go test -pgo=off -count=1 -timeout 20m ./...
fi

# The Python client (clients/python), installed as the README says: a venv
# that sees Debian's redis-py, numpy and pytest, and pip with no index, so
# nothing is fetched. Its tests and the agent loop run with that venv's
# python, so what they import is the installed package (with
# MEMRL_TEST_INSTALLED=1 conftest.py refuses the source folder and checks
# the installed modules are this checkout's, file for file). pip builds in
# the source folder: its build/ is removed before (a stale one could put a
# removed module in the wheel) and after.
pybin="$(mktemp -d)"
srvpid=""
cleanup() {
  if [ -n "$srvpid" ]; then kill "$srvpid" 2>/dev/null || true; wait "$srvpid" 2>/dev/null || true; fi
  rm -rf "$pybin" clients/python/build clients/python/memrl.egg-info
}
trap cleanup EXIT
step "the Python client's tests and the agent loop"
go build -o "$pybin/memrl" ./cmd/memrl
rm -rf clients/python/build clients/python/memrl.egg-info
/usr/bin/python3 -m venv --system-site-packages "$pybin/.venv"
"$pybin/.venv/bin/pip" install --no-build-isolation --no-index ./clients/python
MEMRL_TEST_INSTALLED=1 MEMRL_BIN="$pybin/memrl" "$pybin/.venv/bin/python" -m pytest -q -p no:cacheprovider clients/python/tests

# The agent loop example (README) against a fresh server: a short run that
# must show learning (--check: λ=0.5 ends above its first epoch and above λ=0).
port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$pybin/memrl" serve --addr "127.0.0.1:$port" --dir "$pybin/data" --sync none >"$pybin/serve.log" 2>&1 &
srvpid=$!
"$pybin/.venv/bin/python" examples/python/agent_loop.py --port "$port" --wait 60 --short --compare --check ||
  { cat "$pybin/serve.log" >&2; exit 1; }
