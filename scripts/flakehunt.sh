#!/usr/bin/env bash
# The flake hunt of docs/TESTING.md: runs packages' tests several times
# beside CPU hogs, one package at a time, and writes each run's go test
# -json log and a summary line, so that a long hunt's partial progress
# counts and each failure can be read afterwards.
#
# Usage: bash scripts/flakehunt.sh [--race] [--count N] [--hogs N]
#                                  [--run REGEXP] [--out DIR] PKG...
#
# --count is go test's -count (3); --hogs the number of busy-looping
# shells kept running beside the tests (2), at the tests' own niceness,
# so they compete with the tests as equals; --out the folder of the logs
# (a new temporary one). Each package's line in DIR/summary.txt gives its
# time, exit status, failed test count and the load average at its end;
# python3 scripts/flakehunt_fails.py DIR/*.json prints each failure's
# output. The hogs are stopped when the script ends, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

race=0 count=3 hogs=2 run="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --race) race=1; shift ;;
    --count) count=$2; shift 2 ;;
    --hogs) hogs=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -*) echo "flakehunt.sh: unknown flag $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "usage: bash scripts/flakehunt.sh [--race] [--count N] [--hogs N] [--run REGEXP] [--out DIR] PKG..." >&2
  exit 2
fi
out=${out:-$(mktemp -d /tmp/flakehunt.XXXXXX)}
mkdir -p "$out"

pids=()
stop_hogs() {
  if [ ${#pids[@]} -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  pids=()
}
trap stop_hogs EXIT
for _ in $(seq 1 "$hogs"); do
  nice -n 10 sh -c 'while :; do :; done' &
  pids+=($!)
done

flags=(-count="$count" -timeout 60m -json)
[ "$race" = 1 ] && flags+=(-race)
[ -n "$run" ] && flags+=(-run "$run")
echo "logs in $out"
for p in "$@"; do
  tag=$(echo "${p#./}" | tr '/.' '__')
  [ "$race" = 1 ] && tag="race-$tag"
  start=$(date +%s)
  rc=0
  nice -n 10 go test "${flags[@]}" "$p" >"$out/$tag.json" 2>"$out/$tag.err" || rc=$?
  fails=$(grep -c '"Action":"fail","Package":"[^"]*","Test"' "$out/$tag.json" || true)
  line="$p race=$race count=$count hogs=$hogs secs=$(($(date +%s) - start)) rc=$rc failed_tests=$fails load=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "$line" | tee -a "$out/summary.txt"
done
