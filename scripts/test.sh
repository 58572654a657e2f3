#!/usr/bin/env bash
# The project's test command (README): installs what the tests need, then
# runs every package with the race detector. It must pass on a fresh
# machine by itself.
#
# The protocol tests drive the server with Debian's redis-cli and
# redis-benchmark (redis-tools), and check TLS with redis-py (python3-redis,
# under Debian's /usr/bin/python3); they are installed here with apt-get
# when missing (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null ||
   ! /usr/bin/python3 -c 'import redis' 2>/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "test.sh: redis-cli, redis-benchmark or redis-py are missing; install them with: apt-get install -y redis-tools python3-redis" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  echo "test.sh: installing redis-tools (redis-cli, redis-benchmark) and python3-redis with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-tools python3-redis >/dev/null
fi

go test -race -count=1 -timeout 20m ./...
