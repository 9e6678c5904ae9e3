#!/usr/bin/env python3
"""Where the write side of a notified PUT goes: BenchmarkPutCPU CPU profiles
(internal/notify/service) split into buckets, µs per PUT, and each mode's
difference from the first (none) = the cost per event. Every sample counts once,
in the first bucket (in the order below) whose frames match.

usage: putcpu-split.py TEST_BINARY PUTS none.prof shards1.prof [shards11.prof ...]
  (PUTS: the -test.benchtime count + the benchmark's 100 warm-up PUTs)
"""
import os, sys
from collections import defaultdict
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprofraw import parse, has  # noqa: E402

B = [
 ('GC mark workers', lambda f: has(f,'runtime.gcBgMarkWorker')),
 ('pebble flush', lambda f: has(f,'pebble/v2.(*DB).flush')),
 ('pebble compaction', lambda f: has(f,'pebble/v2.(*DB).compact')),
 ('pebble other bg (WAL writer, deletions)', lambda f: has(f,'LogWriter).flushLoop','cleanupManager','(*DB).deleteObsolete')),
 ('intent removal (intentRemover)', lambda f: has(f,'intentRemover')),
 ('deferred commit ops (runDeferred)', lambda f: has(f,'queue.(*Queues).runDeferred','queue.(*Queues).fireDeferred','commitRound')),
 ('record build + hand-over (CommitDeferred)', lambda f: has(f,'service.(*reservation).CommitDeferred')),
 ('intent encode (Intent)', lambda f: has(f,'service.(*reservation).Intent')),
 ('reserve: queue op (Queues.Reserve op)', lambda f: has(f,'queue.(*Queues).Reserve') and has(f,'Operate')),
 ('reserve: rest (pool take, config match)', lambda f: has(f,'driver.(*Driver).reserve')),
 ('link op: memtable apply (arenaskl/memTable)', lambda f: has(f,'driver.(*Driver).link') and has(f,'arenaskl','memTable).apply')),
 ('link op: reads (omap gets, iter)', lambda f: has(f,'driver.(*Driver).link') and has(f,'embedded.(*txn).get','embedded.(*txn).omapGet','OmapGet','newIter','Iterator')),
 ('link op: WAL/commit pipeline', lambda f: has(f,'driver.(*Driver).link') and has(f,'commitPipeline','(*DB).commitWrite','(*DB).Apply')),
 ('link op: index class + rest', lambda f: has(f,'driver.(*Driver).link')),
 ('writeData', lambda f: has(f,'driver.(*Driver).writeData')),
 ('rest of PutObject', lambda f: has(f,'driver.(*Driver).PutObject')),
 ('scheduler/other', lambda f: True),
]
X = [('x: arenaskl (memtable insert/seek), anywhere', lambda f: has(f,'arenaskl')),
     ('x: mallocgc, anywhere', lambda f: has(f,'runtime.mallocgc')),
     ('x: embedded.(*txn).publishCache/cache', lambda f: has(f,'publishCache')),]
binary, N = sys.argv[1], float(sys.argv[2]); profs = sys.argv[3:]
res = []
for p in profs:
    d = defaultdict(float); tot = 0
    for ns, fr in parse(binary, p):
        tot += ns
        for name, r in B:
            if r(fr): d[name] += ns; break
        for name, r in X:
            if r(fr): d[name] += ns
    d['TOTAL'] = tot; res.append(d)
names = [n for n,_ in B] + ['TOTAL'] + [n for n,_ in X]
print('| bucket (µs per PUT) | ' + ' | '.join(profs) + ' | ' + ' | '.join('Δ '+p for p in profs[1:]) + ' |')
print('|---'*(1+2*len(profs)-1)+'|')
for n in names:
    v = [r[n]/N/1e3 for r in res]
    print(f'| {n} | ' + ' | '.join(f'{x:.1f}' for x in v) + ' | ' + ' | '.join(f'{x-v[0]:+.1f}' for x in v[1:]) + ' |')
