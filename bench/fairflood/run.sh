#!/usr/bin/env bash
# Alternated rounds of bench/fairflood against two builds of memrl serving
# the same folder (docs/BENCHMARKS.md "Many agents on one server").
#
#   bench/fairflood/run.sh DIR BIN_BEFORE BIN_AFTER [ROUNDS] [-- fairflood flags]
#
# DIR holds the data (filled by a first `fairflood -load` run) and the
# users file; each round starts each binary in turn on 127.0.0.1:$PORT,
# runs the flood and the connection test, and stops it.
set -euo pipefail
dir=$1 before=$2 after=$3 rounds=${4:-1}
shift 4 || shift $#
[ "${1:-}" = "--" ] && shift
port=${PORT:-6393}
ff=${FAIRFLOOD:-/tmp/fairflood}
here=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$ff" ] || (cd "$here" && go build -o "$ff" ./bench/fairflood)
if [ ! -f "$dir/users" ]; then
	printf 'default:adminpw:readwrite\nvictim:vpw:readonly\nattacker:apw:readonly\n' >"$dir/users"
	chmod 600 "$dir/users"
fi
run() { # bin name [fairflood flags]
	local bin=$1 name=$2
	shift 2
	"$bin" serve --dir "$dir/data" --addr "127.0.0.1:$port" --sync none --users-file "$dir/users" \
		--maxclients "${MAXCLIENTS:-200}" >"$dir/$name.log" 2>&1 &
	local pid=$!
	for _ in $(seq 100); do
		redis-cli -p "$port" --user default --pass adminpw --no-auth-warning PING >/dev/null 2>&1 && break
		sleep 0.2
	done
	echo "## $name ($bin), load: $(cut -d' ' -f1-3 /proc/loadavg)"
	"$ff" -addr "127.0.0.1:$port" "$@" || true
	"$ff" -addr "127.0.0.1:$port" -mode conns -attack-conns "${ATTACK_CONNS:-250}" || true
	kill "$pid"
	wait "$pid" || true
}
for r in $(seq "$rounds"); do
	echo "# round $r"
	run "$before" before "$@"
	run "$after" after "$@"
done
