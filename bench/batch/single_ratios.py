#!/usr/bin/python3
"""Per round: ONE query per call, new/main CPU time (sum of cpu_us over a setting's repeats) from
DIR/single_{main,new}.ROUND.json; checks recall is identical. Usage: single_ratios.py DIR"""
import json,glob,sys
d=sys.argv[1]
rounds=sorted({f.split('.')[-2] for f in glob.glob(f'{d}/single_new.*.json')})
per={}
for r in rounds:
    m=json.load(open(f'{d}/single_main.{r}.json')); n=json.load(open(f'{d}/single_new.{r}.json'))
    assert [x['recall10'] for x in m]==[x['recall10'] for x in n], 'recall differs'
    ratios=[]
    for np_ in sorted({x['nprobe'] for x in m}):
        a=sum(x['cpu_us'] for x in m if x['nprobe']==np_); b=sum(x['cpu_us'] for x in n if x['nprobe']==np_)
        per.setdefault(np_,[]).append(b/a)
    tot=sum(x['cpu_us'] for x in n)/sum(x['cpu_us'] for x in m)
    per.setdefault('all',[]).append(tot)
for k,v in per.items(): print(k, ' '.join(f'{x:.2f}' for x in v), f'range {min(v):.2f}-{max(v):.2f}')
