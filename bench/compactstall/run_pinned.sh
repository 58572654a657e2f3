#!/bin/bash
# run_pinned.sh BIN NAME PORT: 200,000 memories expiring while a snapshot pins them.
CS=${CS:-/tmp/compactstall} # go build -o /tmp/compactstall ./bench/compactstall
BIN=$1; D=/tmp/cs-$2; PORT=$3
rm -rf $D; mkdir -p $D
start() { $BIN serve --dir $D/db --addr 127.0.0.1:$PORT >> $D/server.log 2>&1 & echo $! > $D/pid; for i in $(seq 1 200); do redis-cli -p $PORT PING >/dev/null 2>&1 && break; sleep 0.1; done; }
stop() { kill $(cat $D/pid); for i in $(seq 1 600); do kill -0 $(cat $D/pid) 2>/dev/null || break; sleep 0.1; done; }
start
$CS -addr 127.0.0.1:$PORT -mode load -n 200000 -keep 100 -ttl 20 -snapshot
echo "== before the restart (expiry at ~20 s)"
timeout 200 $CS -addr 127.0.0.1:$PORT -mode probe -dur 60s -live 100
stop
echo "== after the restart"
start
timeout 200 $CS -addr 127.0.0.1:$PORT -mode probe -dur 40s -live 100
stop
grep -i "compact" $D/server.log | sed 's/^time=[^ ]* //' 
