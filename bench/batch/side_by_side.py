#!/usr/bin/python3
"""Per round, side by side: new/hnsw, main/hnsw, new/main (and new/faiss) at recall@10 >= 0.95 and 0.99,
by CPU time and wall clock. Usage: side_by_side.py DIR ROUNDS"""
import json,sys
d=sys.argv[1]; n=int(sys.argv[2])
def best(path,x,cpu):
    try: rs=[r for r in json.load(open(path)) if r['recall10']>=x]
    except FileNotFoundError: return None
    q=lambda r: (r.get('threads',1)*1e6/r['cpu_us']) if cpu else r['qps']
    return max(map(q,rs)) if rs else None
for x in (0.95,0.99):
    for cpu in (True,False):
        rows=[]
        for r in range(1,n+1):
            a=best(f'{d}/memrl_t2_b2000.{r}.json',x,cpu); m=best(f'{d}/memrlmain_t2_b2000.{r}.json',x,cpu); h=best(f'{d}/hnsw_t2_b2000.{r}.json',x,cpu); f=best(f'{d}/faiss_t2_b2000.{r}.json',x,cpu)
            if None in (a,m,h): continue
            rows.append((a/h,m/h,a/m,(a/f if f else None)))
        fmt=lambda i: ', '.join(f'{t[i]:.2f}' for t in rows)
        print(f"{x} {'cpu' if cpu else 'wall'}: new/hnsw {fmt(0)} | main/hnsw {fmt(1)} | new/main {fmt(2)}" + (f" | new/faiss {min(t[3] for t in rows):.1f}-{max(t[3] for t in rows):.1f}" if rows and rows[0][3] else ''))
