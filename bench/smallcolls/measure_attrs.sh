#!/bin/bash
# Heap of N memories with 5-tag array attributes from a 1M vocabulary,
# with (INDEXED=1) or without (0) an index on tags, loaded and after a
# restart (issue 26 item 6): the index's cost is the difference.
# usage: bench/smallcolls/measure_attrs.sh BIN N INDEXED PORT
set -u
BIN=$1; N=$2; IX=$3; PORT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d)/data
waitup() { for _ in $(seq 1 1200); do redis-cli -p $PORT PING >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
heap() { redis-cli -p $PORT INFO memory | grep -E "^used_memory:|used_memory_dataset:|mem_attr" | tr -d '\r' | tr '\n' ' '; }
$BIN serve --dir $D --addr 127.0.0.1:$PORT > $D.log 2>&1 & P=$!
waitup
python3 "$HERE/gen_attrs.py" $N $IX | timeout 900 redis-cli -p $PORT --pipe | tail -1
sleep 2
echo "loaded: indexed=$IX $(heap)"
kill -TERM $P; wait $P
S=$(date +%s.%N)
$BIN serve --dir $D --addr 127.0.0.1:$PORT >> $D.log 2>&1 & P=$!
waitup
E=$(date +%s.%N)
sleep 2
echo "restart: indexed=$IX start=$(echo "$E - $S" | bc)s $(heap)"
kill -TERM $P; wait $P
rm -rf "$(dirname $D)"
