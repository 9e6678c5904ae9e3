#!/usr/bin/env python3
"""Plot docs/bench/reshard.json: PUT throughput per second during the fill,
with each reshard's window shaded. Usage: reshard_plot.py reshard.json out.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

r = json.load(open(sys.argv[1]))
puts = r["puts_per_sec"]
fig, ax = plt.subplots(figsize=(11, 4.5))
ax.plot(range(len(puts)), puts, lw=1.2, color="#1f77b4", label="PUT/s (1 s buckets)")
for i, ev in enumerate(r["reshards"]):
    ax.axvspan(ev["start_sec"], ev["end_sec"], color="#ff7f0e", alpha=0.25,
               label="reshard window" if i == 0 else None)
    ax.annotate(f'{ev["from_shards"]}→{ev["to_shards"]}\nblock {ev["block_ms"]:.0f} ms',
                (ev["start_sec"], max(puts) * (0.98 - 0.1 * (i % 2))), fontsize=8, va="top")
ax.set_xlabel("seconds since fill start")
ax.set_ylabel("completed PUTs per second")
ax.set_ylim(0, max(puts) * 1.05)
c = r["config"]
ax.set_title(f'{r["objects"]:,} PUTs, {c["Clients"]} clients, {c["Size"]} B bodies, '
             f'max-objs-per-shard {c["MaxObjsPerShard"]}: PUT rate through dynamic reshards')
ax.legend(loc="lower left")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
