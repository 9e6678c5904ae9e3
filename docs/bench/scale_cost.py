#!/usr/bin/env python3
"""Bytes a fill PUT puts through the WAL, compactions and flushes, inside
and outside reshards, from a scale report's per-second LSM samples.

Usage: python3 docs/bench/scale_cost.py REPORT.json [REPORT.json ...]

A second counts when it is a fill second (phase 'f') with PUTs; it is
inside a reshard when a reshard event spans it (one still running at the
end of the run spans to the end). Stop 48 used it to pair the log records
that named keys against those that carried the entry (docs/bench/scale.md).
"""
import json
import sys


def spans(d, n):
    out = []
    for r in d.get('reshard_events') or []:
        s = int(r['start_sec'])
        e = int(r.get('end_sec') or n)
        out.append((s, e))
    return out


def main(paths):
    for path in paths:
        d = json.load(open(path))
        fill = d['fill_puts_per_sec']
        lsm = d['lsm_per_sec']
        phase = d['phase_per_sec']
        sp = spans(d, len(fill))
        acc = {}
        for i, puts in enumerate(fill):
            if i >= len(phase) or phase[i] != 'f' or not puts:
                continue
            where = 'inside' if any(s <= i < e for s, e in sp) else 'outside'
            a = acc.setdefault(where, {'secs': 0, 'puts': 0, 'wal': 0.0, 'compacted': 0.0, 'flushed': 0.0})
            a['secs'] += 1
            a['puts'] += puts
            a['wal'] += lsm['wal_mib'][i] or 0
            a['compacted'] += lsm['compacted_mib'][i] or 0
            a['flushed'] += lsm['flushed_mib'][i] or 0
        print(path, 'reshards (s):', sp)
        for where in ('outside', 'inside'):
            a = acc.get(where)
            if not a:
                continue
            per = lambda mib: mib * 2**20 / a['puts']
            print(f"  {where}: {a['secs']} s, {a['puts'] / a['secs']:.0f} PUT/s, WAL {per(a['wal']):.0f} B/PUT, "
                  f"compacted {per(a['compacted']):.0f} B/PUT, flushed {per(a['flushed']):.0f} B/PUT")


if __name__ == '__main__':
    main(sys.argv[1:])
