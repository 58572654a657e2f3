#!/bin/bash
# run_pinned_compact.sh BIN NAME PORT: MEM.COMPACT of 200,000 pinned + 100 live rows.
CS=${CS:-/tmp/compactstall} # go build -o /tmp/compactstall ./bench/compactstall
BIN=$1; D=/tmp/csc-$2; PORT=$3
rm -rf $D; mkdir -p $D
start() { $BIN serve --dir $D/db --addr 127.0.0.1:$PORT >> $D/server.log 2>&1 & echo $! > $D/pid; for i in $(seq 1 200); do redis-cli -p $PORT PING >/dev/null 2>&1 && break; sleep 0.1; done; }
stop() { kill $(cat $D/pid); for i in $(seq 1 600); do kill -0 $(cat $D/pid) 2>/dev/null || break; sleep 0.1; done; }
start
$CS -addr 127.0.0.1:$PORT -mode load -n 200000 -keep 100 -ttl 5 -snapshot
for i in $(seq 1 60); do c=$(redis-cli -p $PORT MEM.INFO stall | sed -n 8p); [ "$c" = "100" ] && [ "$(redis-cli -p $PORT MEM.INFO stall | grep -A1 -x compacting | tail -1)" = "0" ] && break; sleep 1; done
timeout 300 $CS -addr 127.0.0.1:$PORT -mode compact -dur 200s -live 100
stop
grep -i "compact" $D/server.log | sed 's/^time=[^ ]* //'
rm -rf $D/db
