#!/usr/bin/env bash
# The project's test command (README): installs what the tests need, then
# runs every package with the race detector. It must pass on a fresh
# machine by itself.
#
# The protocol tests drive the server with Debian's redis-cli and
# redis-benchmark (redis-tools), and check TLS with redis-py (python3-redis,
# under Debian's /usr/bin/python3); the Python client's tests and the agent
# loop example (clients/python, examples/python) need python3-numpy and
# python3-pytest too. They are installed here with apt-get when missing (as
# root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null ||
   ! /usr/bin/python3 -c 'import redis, numpy, pytest' 2>/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "test.sh: redis-cli, redis-benchmark, redis-py, numpy or pytest are missing; install them with: apt-get install -y redis-tools python3-redis python3-numpy python3-pytest" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  echo "test.sh: installing redis-tools (redis-cli, redis-benchmark), python3-redis, python3-numpy and python3-pytest with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-tools python3-redis python3-numpy python3-pytest >/dev/null
fi

go test -race -count=1 -timeout 20m ./...

# The Python client (clients/python) against a real server: its pytest
# fixture starts one binary, built here once, on a free loopback port.
pybin="$(mktemp -d)"
trap 'rm -rf "$pybin"' EXIT
go build -o "$pybin/memrl" ./cmd/memrl
MEMRL_BIN="$pybin/memrl" /usr/bin/python3 -m pytest -q -p no:cacheprovider clients/python/tests
