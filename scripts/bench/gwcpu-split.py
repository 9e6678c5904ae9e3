#!/usr/bin/env python3
"""Where a notified PUT's gateway CPU goes: per-cell CPU profiles of the gateway
process (`cairn bench notify --gateway-profile-dir DIR`) split into buckets, µs per
PUT, and each mode's difference from `none` = the cost per event. Every sample
counts once, in the first bucket (in the order below) whose frames match; the
"x:" rows count a sample wherever the frame is (across buckets).

usage: gwcpu-split.py CAIRN_BINARY RESULT_JSON DIR [-r ROUNDS] [-v]
  RESULT_JSON: the run's --json (PUTs per cell); DIR: the profiles. Cells of the
  same mode are summed over rounds (samples / PUTs).
"""
import json, os, sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprofraw import parse, has  # noqa: E402

D = 'notify/delivery.'
B = [
 ('GC: background mark workers', lambda f: has(f, 'runtime.gcBgMarkWorker')),
 ('pebble: flush', lambda f: has(f, 'pebble/v2.(*DB).flush')),
 ('pebble: compaction', lambda f: has(f, 'pebble/v2.(*DB).compact', 'runCompaction')),
 ('pebble: WAL writer, deletions, other bg', lambda f: has(f, 'LogWriter).flushLoop', 'cleanupManager', '(*DB).deleteObsolete')),
 ('pebble: sstable/blob write queues', lambda f: has(f, 'drainWriteQueue')),
 ('GC: sweep, scavenge', lambda f: has(f, 'runtime.bgsweep', 'runtime.bgscavenge')),
 ('background: orphan scans (server.orphanJob)', lambda f: has(f, 'server.(*orphanJob)')),
 ('bench: queue stats polled by the bench (admin API)', lambda f: has(f, 'queue.(*Queues).Stats')),
 ('delivery: queue stats each scan (refreshQueues)', lambda f: has(f, D + '(*Manager).refreshQueues')),
 ('delivery: HTTP push (endpoint, push)', lambda f: has(f, 'notify/endpoint/', 'notify/push.')),
 ('delivery: list (lease.list, fill)', lambda f: has(f, D + '(*lease).list', D + '(*worker).fill')),
 ('delivery: removal (lease.commit, flush)', lambda f: has(f, D + '(*lease).commit', D + '(*worker).flush')),
 ('delivery: rest (worker, manager)', lambda f: has(f, D)),
 ('write: deferred commit ops (runDeferred)', lambda f: has(f, 'queue.(*Queues).runDeferred', 'queue.(*Queues).fireDeferred', 'commitRound')),
 ('write: intent removal (intentRemover)', lambda f: has(f, 'intentRemover')),
 ('write: record build + hand-over (CommitDeferred)', lambda f: has(f, 'service.(*reservation).CommitDeferred')),
 ('write: intent encode (Intent)', lambda f: has(f, 'service.(*reservation).Intent')),
 ('write: reserve (driver.reserve)', lambda f: has(f, 'driver.(*Driver).reserve')),
 ('PUT: link op', lambda f: has(f, 'driver.(*Driver).link')),
 ('PUT: data write', lambda f: has(f, 'driver.(*Driver).writeData')),
 ('PUT: rest of driver.PutObject', lambda f: has(f, 'driver.(*Driver).PutObject')),
 ('PUT: SigV4', lambda f: has(f, 'auth/sigv4.')),
 ('PUT: rest of s3api', lambda f: has(f, 's3api.')),
 ('PUT: net/http server conn', lambda f: has(f, 'net/http.(*conn).serve')),
 ('stack growth (newstack), outside the above', lambda f: has(f, 'runtime.newstack')),
 ('scheduler (schedule, park, netpoll)', lambda f: has(f, 'runtime.schedule', 'runtime.mcall', 'runtime.park_m', 'runtime.netpoll', 'runtime.findRunnable')),
 ('other (timers, sysmon, admin API, ...)', lambda f: True),
]
X = [('x: mallocgc', lambda f: has(f, 'runtime.mallocgc')),
     ('x: GC assist (gcAssistAlloc)', lambda f: has(f, 'runtime.gcAssistAlloc')),
     ('x: stack growth (newstack/copystack)', lambda f: has(f, 'runtime.newstack')),
     ('x: memtable (arenaskl)', lambda f: has(f, 'arenaskl')),
     ('x: syscalls (Syscall6)', lambda f: has(f, 'Syscall6')),
     ('x: scheduler (schedule)', lambda f: has(f, 'runtime.schedule')),]

binary, resj, pdir = sys.argv[1:4]
# -r 1,3: only those rounds (e.g. to leave out a cell a load spike hit)
only = [int(x) for x in sys.argv[sys.argv.index('-r') + 1].split(',')] if '-r' in sys.argv else []
res = json.load(open(resj))
acct = defaultdict(float)
puts, tot, d = defaultdict(int), defaultdict(float), defaultdict(lambda: defaultdict(float))
unm = defaultdict(lambda: defaultdict(float))
for c in res['cells']:
    if c.get('soak') or c['op'] != 'put': continue
    if only and c['round'] not in only: continue
    tag = 'r%d' % c['round']; mode = c['mode']
    path = '%s/%s-put-4KiB-%s.pprof' % (pdir, tag, mode.replace('=', ''))
    ops = c['s3']['ops']
    puts[mode] += ops
    acct[mode] += c.get('gateway_cpu_seconds', 0)
    for ns, fr in parse(binary, path):
        d[mode]['TOTAL (profile)'] += ns
        for name, r in B:
            if r(fr):
                d[mode][name] += ns
                if name.startswith('other'):
                    unm[mode][' < '.join(fr[-3:][::-1]) if fr else '?'] += ns
                break
        for name, r in X:
            if r(fr): d[mode][name] += ns
modes = [m for m in ('none', 'shards=1', 'shards=11') if m in puts]
names = [n for n, _ in B] + ['TOTAL (profile)'] + [n for n, _ in X]
print('PUTs per mode: ' + ', '.join('%s %d' % (m, puts[m]) for m in modes))
print('| bucket (µs per PUT) | ' + ' | '.join(modes) + ' | ' + ' | '.join('Δ ' + m for m in modes[1:]) + ' |')
print('|---' * (2 * len(modes)) + '|')
for n in names:
    v = [d[m][n] / puts[m] / 1e3 for m in modes]
    print(f'| {n} | ' + ' | '.join(f'{x:.1f}' for x in v) + ' | ' + ' | '.join(f'{x - v[0]:+.1f}' for x in v[1:]) + ' |')
print('| gateway CPU accounting (/proc), load phase | ' + ' | '.join(f'{acct[m] / puts[m] * 1e6:.1f}' for m in modes) + ' | ' +
      ' | '.join(f'{acct[m] / puts[m] * 1e6 - acct[modes[0]] / puts[modes[0]] * 1e6:+.1f}' for m in modes[1:]) + ' |')
if '-v' in sys.argv:
    for m in modes:
        print('other, top outermost frames,', m)
        for f, ns in sorted(unm[m].items(), key=lambda x: -x[1])[:15]:
            print('   %.2f µs/PUT %s' % (ns / puts[m] / 1e3, f))
