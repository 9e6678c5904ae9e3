#!/usr/bin/env python3
"""Where a notified PUT's extra CPU goes: a whole-process split of in-process
`cairn bench notify --cpuprofile` cells, per PUT, and the difference from a
`none` cell per event.

usage: notify-split.py BIN NONE.out NONE.json CELL.out CELL.json [CELL2.out CELL2.json ...]

Every sample counts once, in the first bucket (in the order below) whose rule
matches its stack (frames leaf to root) or labels. Pebble's background
goroutines carry a `pebble` label instead of the bench's `role`; GC mark
workers and the scheduler carry none: in-process they serve client, receiver
and gateway alike, so the "gateway share" column splits them by the
gateway's share of allocation (mallocgc samples), an estimate.
"""
import json, re, subprocess, sys
from collections import defaultdict

P = 'github.com/cairn-s3/cairn/internal/'

def parse(binary, prof):
    raw = subprocess.run(['go', 'tool', 'pprof', '-raw', binary, prof], capture_output=True, text=True).stdout
    lines = raw.split('\n')
    i = lines.index('Samples:') + 2
    samples = []
    while not lines[i].startswith('Locations'):
        m = re.match(r'\s+(\d+)\s+(\d+): ([\d ]+)$', lines[i])
        if m:
            samples.append([int(m.group(2)), [int(x) for x in m.group(3).split()], {}])
        elif lines[i].strip() and samples:
            for k, v in re.findall(r'(\w[\w-]*):\[([^\]]*)\]', lines[i]):
                samples[-1][2][k] = v
        i += 1
    locs, cur = {}, None
    i += 1
    while i < len(lines) and not lines[i].startswith('Mappings'):
        m = re.match(r'\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)', lines[i])
        if m:
            cur = int(m.group(1)); locs[cur] = [m.group(2)]
        else:
            m = re.match(r'\s+(\S+) \S+:\d+:\d+ s=\d+$', lines[i])
            if m and cur is not None:
                locs[cur].append(m.group(1))
        i += 1
    out = []
    for ns, ids, labels in samples:
        frames = [f for l in ids for f in locs.get(l, [])]
        out.append((ns, frames, labels))
    return out

def has(frames, *subs):
    return any(any(s in f for s in subs) for f in frames)

# (bucket, rule) in priority order; rule(frames, labels) -> bool
def gw(lab):
    return lab.get('role') == 'gateway'

BUCKETS = [
    ('GC mark workers (unlabeled)', lambda f, l: has(f, 'runtime.gcBgMarkWorker')),
    ('pebble flush (bg)', lambda f, l: l.get('pebble') == 'flush'),
    ('pebble compaction (bg)', lambda f, l: l.get('pebble') == 'compact'),
    ('pebble WAL writer/sync (bg)', lambda f, l: l.get('pebble') == 'wal-sync'),
    ('pebble other (bg)', lambda f, l: 'pebble' in l),
    ('gw: delivery push', lambda f, l: has(f, 'notify/delivery.(*worker).push')),
    ('gw: delivery removals (flush)', lambda f, l: has(f, 'notify/delivery.(*worker).flush')),
    ('gw: delivery lists (fill)', lambda f, l: has(f, 'notify/delivery.(*worker).fill')),
    ('gw: delivery other', lambda f, l: has(f, 'notify/delivery.')),
    ('gw: deferred commit ops', lambda f, l: has(f, 'notify/queue.(*Queues).runDeferred', 'notify/queue.(*Queues).runGroup')),
    ('client', lambda f, l: l.get('role') == 'client'),
    ('receiver', lambda f, l: l.get('role') == 'receiver'),
    ('gw: PUT: notify record+hand-over', lambda f, l: gw(l) and has(f, 'notify/service.(*reservation).CommitDeferred', 'notify/service.(*reservation).Commit')),
    ('gw: PUT: notify intent', lambda f, l: gw(l) and has(f, 'notify/service.(*reservation).Intent')),
    ('gw: PUT: notify reserve', lambda f, l: gw(l) and has(f, 'notify/service.(*Service).Reserve')),
    ('gw: PUT: notify other (config match, event)', lambda f, l: gw(l) and has(f, P + 'notify/')),
    ('gw: PUT: pebble commit (WAL+memtable, caller side)', lambda f, l: gw(l) and has(f, 'pebble/v2.(*DB).Apply', 'pebble/v2.(*commitPipeline)', 'pebble/v2.(*Batch).Commit')),
    ('gw: PUT: pebble batch build/reads', lambda f, l: gw(l) and has(f, 'pebble/v2.') and has(f, 's3api.(*Server).ServeHTTP')),
    ('gw: PUT: class calls (bucketindex/cls)', lambda f, l: gw(l) and has(f, P + 'bucketindex.', P + 'cls/') and has(f, 's3api.(*Server).ServeHTTP')),
    ('gw: PUT: rest of the request (HTTP, auth, driver)', lambda f, l: gw(l) and has(f, 's3api.(*Server).ServeHTTP')),
    ('gw: HTTP conn (read/write outside handler)', lambda f, l: gw(l) and has(f, 'net/http.(*conn).serve')),
    ('gw: other', lambda f, l: gw(l)),
    ('unlabeled: scheduler/idle', lambda f, l: has(f, 'runtime.schedule', 'runtime.findRunnable', 'runtime.mcall', 'runtime.park_m')),
    ('unlabeled: other', lambda f, l: True),
]
# cross-cutting (overlap the buckets): samples whose stack holds these
CROSS = [
    ('x gw: allocation (mallocgc, incl. assist)', lambda f, l: gw(l) and has(f, 'runtime.mallocgc')),
    ('x gw: GC assist', lambda f, l: gw(l) and has(f, 'runtime.gcAssistAlloc')),
    ('x all: allocation (mallocgc)', lambda f, l: has(f, 'runtime.mallocgc')),
    ('x gw: memtable inserts (memTable.apply / arenaskl)', lambda f, l: gw(l) and has(f, 'pebble/v2.(*memTable).apply', 'arenaskl')),
    ('x gw: WAL record encode (LogWriter, caller side)', lambda f, l: gw(l) and has(f, 'record.(*LogWriter)')),
    ('x gw: futex/syscall', lambda f, l: gw(l) and has(f, 'runtime.futex', 'syscall.Syscall', 'internal/runtime/syscall')),
    ('x gw: goroutine wake/park (ready, gopark, chan)', lambda f, l: gw(l) and has(f, 'runtime.ready', 'runtime.gopark', 'runtime.goready', 'runtime.chansend', 'runtime.chanrecv', 'runtime.selectgo')),
    ('x gw: JSON encode/decode (encoding/json)', lambda f, l: gw(l) and has(f, 'encoding/json.')),
    ('x gw: embedded store (objstore/embedded)', lambda f, l: gw(l) and has(f, P + 'objstore/embedded.')),
]

def split(binary, prof, js):
    c = json.load(open(js))['cells'][0]
    puts = c['s3']['ops']
    events = c.get('pushes_ok', 0)
    acc = defaultdict(float)
    total = 0
    for ns, f, l in parse(binary, prof):
        total += ns
        for name, rule in BUCKETS:
            if rule(f, l):
                acc[name] += ns
                break
        for name, rule in CROSS:
            if rule(f, l):
                acc[name] += ns
    acc['TOTAL (whole process)'] = total
    return c, puts, events, acc

def main():
    binary = sys.argv[1]
    args = sys.argv[2:]
    cells = [split(binary, args[i], args[i + 1]) for i in range(0, len(args), 2)]
    base = cells[0]
    names = [n for n, _ in BUCKETS] + ['TOTAL (whole process)'] + [n for n, _ in CROSS]
    hdr = '| µs per PUT | ' + ' | '.join(f"{c[0]['mode']}" for c in cells) + ' | ' + \
        ' | '.join(f"Δ per event {c[0]['mode']}" for c in cells[1:]) + ' |'
    print(hdr)
    print('|' + '---|' * (1 + len(cells) + len(cells) - 1))
    print('| PUTs / events | ' + ' | '.join(f"{c[1]} / {int(c[2])}" for c in cells) + ' |' + ' |' * (len(cells) - 1))
    for n in names:
        row = [c[3][n] / c[1] / 1e3 for c in cells]
        d = [(c[3][n] / c[1] - base[3][n] / base[1]) / 1e3 * c[1] / max(c[2], 1) for c in cells[1:]]
        print(f'| {n} | ' + ' | '.join(f'{v:.1f}' for v in row) + ' | ' + ' | '.join(f'{v:+.1f}' for v in d) + ' |')
    # groups: the parts rounds 3-5 measured, the store's background work,
    # the PUT's own path outside the notification frames, GC and scheduler
    # (the gateway's share, by its share of allocation)
    for c in cells:
        a = c[3]
        share = a['x gw: allocation (mallocgc, incl. assist)'] / max(a['x all: allocation (mallocgc)'], 1)
        un = a['GC mark workers (unlabeled)'] + a['unlabeled: scheduler/idle'] + a['unlabeled: other']
        a['G parts'] = sum(v for k, v in a.items() if k.startswith(('gw: delivery', 'gw: deferred', 'gw: PUT: notify')))
        a['G  of it delivery'] = sum(v for k, v in a.items() if k.startswith('gw: delivery'))
        a['G  of it intent+reserve+match'] = sum(v for k, v in a.items() if k.startswith(('gw: PUT: notify intent', 'gw: PUT: notify reserve', 'gw: PUT: notify other')))
        a['G store background'] = sum(v for k, v in a.items() if k.startswith('pebble'))
        a['G PUT path outside notify'] = sum(v for k, v in a.items() if k.startswith('gw:')) - a['G parts']
        a['G GC+sched (gateway share)'] = share * un
        a['G gateway total'] = a['G parts'] + a['G store background'] + a['G PUT path outside notify'] + a['G GC+sched (gateway share)']
    print()
    for n in ['G parts', 'G  of it delivery', 'G  of it intent+reserve+match', 'G store background', 'G PUT path outside notify', 'G GC+sched (gateway share)', 'G gateway total']:
        row = [c[3][n] / c[1] / 1e3 for c in cells]
        d = [(c[3][n] / c[1] - base[3][n] / base[1]) / 1e3 * c[1] / max(c[2], 1) for c in cells[1:]]
        print(f'| {n} | ' + ' | '.join(f'{v:.1f}' for v in row) + ' | ' + ' | '.join(f'{v:+.1f}' for v in d) + ' |')
    # gateway-attributable: labeled gateway + pebble bg + share of GC/unlabeled
    print()
    for c in cells:
        a = c[3]
        gwl = sum(v for k, v in a.items() if k.startswith('gw:'))
        peb = sum(v for k, v in a.items() if k.startswith('pebble'))
        share = a['x gw: allocation (mallocgc, incl. assist)'] / max(a['x all: allocation (mallocgc)'], 1)
        un = a['GC mark workers (unlabeled)'] + a['unlabeled: scheduler/idle'] + a['unlabeled: other']
        est = gwl + peb + share * un
        print(f"{c[0]['mode']}: gateway-labeled {gwl/c[1]/1e3:.1f} µs/PUT, pebble bg {peb/c[1]/1e3:.1f}, "
              f"unlabeled (GC, sched) {un/c[1]/1e3:.1f} × gateway alloc share {share:.2f}; "
              f"gateway estimate {est/c[1]/1e3:.1f} µs/PUT; store {c[0].get('store')}")
        c[3]['EST'] = est
    for c in cells[1:]:
        d = (c[3]['EST'] / c[1] - base[3]['EST'] / base[1]) / 1e3 * c[1] / max(c[2], 1)
        print(f"{c[0]['mode']}: gateway estimate per event over none: {d:+.1f} µs")

main()
