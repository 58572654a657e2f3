#!/usr/bin/env bash
# The project's test command (README): every package with the race
# detector. Tests that need redis-cli / redis-benchmark fail if they are
# missing; install them with `apt-get install -y redis-tools`.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -race -count=1 -timeout 20m ./...
