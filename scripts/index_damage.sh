#!/usr/bin/env bash
# index_damage.sh MEMRL [PORT [NLIST]]: the real-process check of issue 26 item 10
# (a flipped byte in a saved IVF-PQ index's lists). It starts MEMRL (a
# built memrl binary) on 127.0.0.1:PORT over a fresh folder, creates an
# IVF-PQ collection of 20,000 clustered 16-dimensional vectors (NLIST lists,
# 64 by default; the default NPROBE, 24, probes every list of 24 or fewer,
# so that every query meets the damage), waits for
# its index, stops the server (SIGTERM: the index is saved), flips one byte
# in the middle of the index file's list section, starts the server again
# and sends 60 MEM.RETRIEVE through redis-cli, then prints how many failed,
# MEM.INFO's index and the server's log lines about the index. Every
# server it starts is stopped before it exits; every wait is bounded.
set -euo pipefail
BIN=${1:?usage: index_damage.sh MEMRL [PORT [NLIST]]}
PORT=${2:-7391}
NLIST=${3:-64}
DIR=$(mktemp -d /tmp/index_damage.XXXXXX)
LOG=$DIR/server.log
PID=
cli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
stop() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID"
    for _ in $(seq 1 300); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$PID" 2>/dev/null && kill -KILL "$PID"
    wait "$PID" 2>/dev/null || true
  fi
  PID=
}
trap stop EXIT
start() {
  "$BIN" serve --dir "$DIR/db" --addr "127.0.0.1:$PORT" >>"$LOG" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do cli PING >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "server did not answer within 30 s" >&2
  exit 1
}
# vectors N SEED: N lines of 16 floats around the same 32 centres.
vectors() {
  awk -v n="$1" -v seed="$2" 'BEGIN {
    srand(1)
    for (c = 0; c < 32; c++) for (j = 0; j < 16; j++) ctr[c, j] = rand() * 10
    srand(seed)
    for (i = 0; i < n; i++) {
      c = int(rand() * 32); line = ""
      for (j = 0; j < 16; j++) line = line sprintf(" %.4f", ctr[c, j] + rand() - 0.5)
      print line
    }
  }'
}

start
cli MEM.CREATE d DIM 16 METRIC L2 INDEX IVFPQ NLIST "$NLIST" TRAIN 2000 >/dev/null
vectors 20000 1 | awk '{ printf "MEM.MADD d"; for (k = 0; k < 1; k++) printf " VALUES 16%s", $0; print "" }' |
  awk 'NR % 100 == 1 { if (line) print line; line = $0; next } { sub(/^MEM.MADD d/, ""); line = line $0 } END { print line }' |
  cli >/dev/null
for _ in $(seq 1 600); do
  cli MEM.INFO d | grep -q "^ivfpq nlist=$NLIST .*rows=20000" && break
  sleep 0.1
done
cli MEM.INFO d | grep '^ivfpq\|^flat' | sed 's/^/before the flip: /'
stop

IDX=$(ls "$DIR"/db/collections/*/ivfpq*/ivfpq.idx)
read -r DATAOFF DATALEN < <("$BIN" dump index "$IDX" | sed -n 's/.*lists @\([0-9]*\) (\([0-9]*\) bytes).*/\1 \2/p')
AT=$((DATAOFF + DATALEN / 2))
byte=$(od -An -tu1 -j "$AT" -N1 "$IDX" | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 16)))" | dd of="$IDX" bs=1 seek="$AT" conv=notrunc status=none
echo "flipped byte $AT of $IDX (list section @$DATAOFF, $DATALEN bytes):"
"$BIN" dump index "$IDX" 2>&1 | grep DAMAGED || true

start
fail=0
while read -r v; do
  if cli MEM.RETRIEVE d VALUES 16 $v K1 10 K2 10 2>&1 | grep -q '^ERR\|corrupt'; then fail=$((fail + 1)); fi
done < <(vectors 60 2)
echo "retrievals failing: $fail of 60"
cli MEM.INFO d | grep '^ivfpq\|^flat' | sed 's/^/after the flip: /'
for _ in $(seq 1 600); do
  cli MEM.INFO d | grep -q '^ivfpq.*rows=20000 trained=[0-9]*$' && break
  sleep 0.1
done
cli MEM.INFO d | grep '^ivfpq\|^flat' | sed 's/^/later: /'
stop
echo "server log about the index:"
grep -i 'index' "$LOG" | sed 's/^/  /'
rm -rf "$DIR"
