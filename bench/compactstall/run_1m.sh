#!/bin/bash
# run_1m.sh BIN NAME PORT: a compaction of 1,000,000 live memories (1,300,000 rows, 300,000 deleted).
CS=${CS:-/tmp/compactstall} # go build -o /tmp/compactstall ./bench/compactstall
BIN=$1; D=/tmp/c1m-$2; PORT=$3
rm -rf $D; mkdir -p $D
start() { $BIN serve --dir $D/db --addr 127.0.0.1:$PORT >> $D/server.log 2>&1 & echo $! > $D/pid; for i in $(seq 1 600); do redis-cli -p $PORT PING >/dev/null 2>&1 && break; sleep 0.1; done; }
stop() { kill $(cat $D/pid); for i in $(seq 1 1200); do kill -0 $(cat $D/pid) 2>/dev/null || break; sleep 0.1; done; }
start
timeout 600 $CS -addr 127.0.0.1:$PORT -mode load -n 1300000 -delete 300000
echo "== idle"
timeout 100 $CS -addr 127.0.0.1:$PORT -mode probe -dur 20s -writer
echo "== during MEM.COMPACT WAIT"
timeout 700 $CS -addr 127.0.0.1:$PORT -mode compact -dur 600s -writer
stop
grep -i "compact" $D/server.log | sed 's/^time=[^ ]* //'
rm -rf $D/db
