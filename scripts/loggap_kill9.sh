#!/bin/sh
# loggap_kill9.sh BIN PORT: issue 26 item 9 from outside. With `memrl serve`
# (BIN) on 127.0.0.1:PORT: create a collection, add 20 memories, checkpoint,
# add 3, kill -9, empty wal/ (an operator's rm), start again: refused or
# not? (If refused, start with --accept-log-gap.) Then add 10, kill -9,
# start without the flag and count the 10 acknowledged adds that survived,
# and whether a new add reuses an id. Needs redis-cli.
set -u
BIN=$1 PORT=$2
DIR=$(mktemp -d)/data
LOG=$DIR.log
cli() { redis-cli -p "$PORT" "$@"; }
start() { # start [flags]: background server; waits until it answers
	"$BIN" serve --dir "$DIR" --addr 127.0.0.1:"$PORT" "$@" >>"$LOG" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		cli PING >/dev/null 2>&1 && return 0
		kill -0 $PID 2>/dev/null || { wait $PID; return 1; }
		sleep 0.1
	done
	kill -9 $PID; return 1
}
kill9() { kill -9 "$PID"; wait "$PID" 2>/dev/null; }

start || { echo "first start failed"; cat "$LOG"; exit 1; }
cli MEM.CREATE k DIM 4 >/dev/null
for i in $(seq 20); do cli MEM.ADD k VALUES 4 1 2 3 $i >/dev/null; done
cli MEM.CHECKPOINT >/dev/null
for i in 21 22 23; do cli MEM.ADD k VALUES 4 1 2 3 $i >/dev/null; done
kill9
rm -f "$DIR"/wal/*
if start; then
	echo "log emptied below the checkpoint: OPENED SILENTLY"
else
	echo "log emptied below the checkpoint: REFUSED: $(grep -o 'log gap[^"]*' "$LOG" | head -1 | cut -c1-160)..."
	start --accept-log-gap || { echo "start with --accept-log-gap failed"; tail -5 "$LOG"; exit 1; }
	echo "started with --accept-log-gap"
fi
IDS=""
for i in $(seq 10); do IDS="$IDS $(cli MEM.ADD k VALUES 4 4 3 2 $i)"; done
echo "acknowledged adds: ids$IDS"
kill9
start || { echo "restart after kill -9 (no flag) REFUSED"; tail -3 "$LOG"; exit 1; }
n=0
for id in $IDS; do cli MEM.GET k "$id" | grep -q '^id$' && n=$((n + 1)); done
NEW=$(cli MEM.ADD k VALUES 4 9 9 9 9)
reused=no
for id in $IDS $(seq 23); do [ "$id" = "$NEW" ] && reused=yes; done
echo "after kill -9: $n of 10 acknowledged adds survived; next add got id $NEW (reused: $reused)"
kill "$PID"; wait "$PID" 2>/dev/null
rm -rf "$(dirname "$DIR")"
