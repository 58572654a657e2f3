#!/bin/bash
# RSS and start time of N small collections (300 memories of 16-d each,
# INDEX IVFPQ TRAIN 256), loaded through redis-cli --pipe, then after a
# restart (issue 26 item 4). Needs python3 and redis-cli (redis-tools).
# usage: bench/smallcolls/measure_colls.sh BIN N PORT
set -u
BIN=$1; N=$2; PORT=$3
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d)/data
rss() { awk '/VmRSS/{print $2/1024 " MB"}' /proc/$1/status; }
waitup() { for _ in $(seq 1 1200); do redis-cli -p $PORT PING >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
$BIN serve --dir $D --addr 127.0.0.1:$PORT > $D.log 2>&1 & P=$!
waitup
python3 "$HERE/gen_colls.py" $N 300 | timeout 900 redis-cli -p $PORT --pipe | tail -2
sleep 3
echo "loaded: N=$N rss=$(rss $P)"
redis-cli -p $PORT INFO memory | grep -E "used_memory:|rss:|mem_|data"
kill -TERM $P; wait $P
S=$(date +%s.%N)
$BIN serve --dir $D --addr 127.0.0.1:$PORT >> $D.log 2>&1 & P=$!
waitup
E=$(date +%s.%N)
sleep 2
echo "restart: N=$N start=$(echo "$E - $S" | bc)s rss=$(rss $P)"
redis-cli -p $PORT INFO memory | grep -E "used_memory:|rss:|mem_|data"
kill -TERM $P; wait $P
du -sh $D; rm -rf "$(dirname $D)"
