#!/bin/bash
# alt.sh BIN NPROBE REFINE SWEEPS VAR VAL: one process of BIN with VAR=VAL, whose
# temporary switch alternates SearchBatch calls between two variants; rows 0,2,.. vs 1,3,..
# (1M index in /tmp/f29/ix1m, data in /work/shared/data/sift1m-deb; rows to $OUT).
B=$1; NPV=$2; RF=$3; N=$4; VAR=$5; VAL=$6
D=/work/shared/data/sift1m-deb; NP=$(python3 -c "print(','.join(['$NPV']*$N))")
export OUT=${OUT:-/tmp/alt.txt}
env $VAR=$VAL $B bench ann --base $D/base.bvecs --query $D/query.bvecs --gt $D/groundtruth.ivecs --nq 2000 --index-dir /tmp/f29/ix1m --reuse-index --nprobe $NP --refine $RF --threads ${THR:-2} --batch 2000 2>/dev/null | awk '/^IVF/{print $9, $10, $12}' > ${OUT:-/tmp/alt.txt}
python3 - <<'PY'
import statistics as st
import os
rows=[[float(x) for x in l.split()] for l in open(os.environ.get('OUT', '/tmp/alt.txt'))]
a=rows[0::2]; b=rows[1::2]; n=min(len(a),len(b)); a=a[:n]; b=b[:n]
def s(name, xs): q=st.quantiles(xs,n=4); return f"{name} med {st.median(xs):.3f} q1 {q[0]:.3f} q3 {q[2]:.3f}"
print("recall even", a[0][0], "odd", b[0][0], "n", n)
print(s("qps odd/even", [y[1]/x[1] for x,y in zip(a,b)]))
print(s("cpu odd/even", [y[2]/x[2] for x,y in zip(a,b)]))
print(s("par even", [x[1]*x[2]/1e6 for x in a]), "|", s("par odd", [x[1]*x[2]/1e6 for x in b]))
PY
