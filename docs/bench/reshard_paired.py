#!/usr/bin/env python3
"""Compare a fill with dynamic reshards against the same fill without them
(CAIRN_BENCH_RESHARD_MAX_OBJS=100000000), second by second at equal fill
level: the PUT rate of each second inside a reshard window over the rate the
no-reshard run had when its bucket held the same number of objects (mean of
its seconds within +-2.5 % of that count). Also the same 1 s / prior 5 s
statistic the benchmark reports, for both runs, so the noise floor of the
machine (the no-reshard run has no reshards at all) sits next to it.
Usage: reshard_paired.py reshard.json baseline.json"""
import json
import sys


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))] if v else float("nan")


def cum(puts):
    out, n = [], 0
    for x in puts:
        n += x
        out.append(n)
    return out


def prior5(puts):
    r = []
    for i in range(5, len(puts)):
        base = sum(puts[i - 5:i]) / 5
        if base > 0:
            r.append(puts[i] / base)
    return r


run, base = (json.load(open(p)) for p in sys.argv[1:3])
rp, bp = run["puts_per_sec"], base["puts_per_sec"]
rc, bc = cum(rp), cum(bp)


def base_rate(objs):
    sel = [bp[i] for i in range(len(bp) - 1) if abs(bc[i] - objs) <= 0.025 * objs + 5000]
    return sum(sel) / len(sel) if sel else None


inside, outside = [], []
for i in range(len(rp) - 1):  # the last second is partial
    b = base_rate(rc[i])
    if not b:
        continue
    ratio = rp[i] / b
    t = i + 0.5
    if any(ev["start_sec"] <= t <= ev["end_sec"] for ev in run["reshards"] or []):
        inside.append(ratio)
    else:
        outside.append(ratio)

print(f"run: {run['objects']:,} objects in {run['fill_sec']:.1f} s, {len(run['reshards'] or [])} reshards; "
      f"baseline: {base['objects']:,} in {base['fill_sec']:.1f} s, {len(base['reshards'] or [])} reshards")
print("rate / no-reshard rate at the same fill level:")
for name, v in (("inside reshards", inside), ("outside reshards", outside)):
    if v:
        print(f"  {name:17s} n={len(v):4d}  min {min(v):.2f}  p5 {pct(v, 5):.2f}  p50 {pct(v, 50):.2f}  "
              f"mean {sum(v) / len(v):.2f}  seconds < 0.8: {sum(x < 0.8 for x in v) / len(v):.0%}")
for name, puts in (("run", rp[:-1]), ("no-reshard baseline", bp[:-1])):
    v = prior5(puts)
    print(f"1 s / prior 5 s, {name:19s}: min {min(v):.2f}  p5 {pct(v, 5):.2f}  p50 {pct(v, 50):.2f}  "
          f"seconds < 0.8: {sum(x < 0.8 for x in v) / len(v):.0%}")
