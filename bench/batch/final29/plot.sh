#!/usr/bin/env bash
# The closing set's plots and tables: relabel each JSON's engine field (the old build and the
# PQ64x4 shape get their own curves; the default's two runs at 1M pool into one; one-thread
# sweeps, *_t1, each a curve), then bench/batch/plot_batch.py, wall clock and --cpu. Needs
# python3-matplotlib. DIR: the set's folder (default this one); OLDLABEL: the old build's
# curve (default 'memrl d2c2769', this set's).
#
#   bash bench/batch/final29/plot.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "${1:-$here}"
T=$(mktemp -d)
OLDLABEL=${OLDLABEL:-memrl d2c2769} python3 - "$T" <<'PY'
import json, glob, os, re, sys
lab = {'memrl': 'memrl', 'memrlb': 'memrl', 'memrlold': os.environ['OLDLABEL'], 'memrlpq64': 'memrl PQ64x4',
       'memrlpq64b': 'memrl PQ64x4', 'hnsw': None, 'faiss': None, 'memrl_t1': 'memrl', 'hnsw_t1': None, 'faiss_t1': None}
for p in glob.glob('m*_*.json'):
    size, e, r = re.match(r'm(100k|1m)_(\w+)\.(\d+)\.json', p).groups()
    if e not in lab: continue
    d = json.load(open(p))
    for x in d:
        if lab[e]: x['engine'] = lab[e]
    json.dump(d, open(f'{sys.argv[1]}/{size}_{e}.{r}.json', 'w'))
PY
for s in 100k 1m; do
  /usr/bin/python3 $here/../plot_batch.py recall_qps_$s.png $T/${s}_*.json > table_$s.md
  /usr/bin/python3 $here/../plot_batch.py --cpu recall_qps_cpu_$s.png $T/${s}_*.json > table_cpu_$s.md
done
rm -rf "$T"
