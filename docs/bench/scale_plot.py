#!/usr/bin/env python3
"""Plot a `cairn bench scale` report (docs/bench/scale.json, scale-s3.json).

Usage: scale_plot.py REPORT.json OUT_PREFIX
Writes OUT_PREFIX.png (per round: ops/s, latency and ListObjectsV2 page time
against object count, reshards marked) and OUT_PREFIX-timeline.png (fill
PUTs per second over the run, reshards shaded, 10 s window ratios)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

r = json.load(open(sys.argv[1]))
out = sys.argv[2]
rounds = [x for x in r["rounds"] if x["objects"] > 0]
evs = r.get("reshard_events") or []
xs = [x["objects"] for x in rounds]
title = (f'cairn bench scale ({r["mode"]}): {r["objects"]:,} objects, {r["reshards"]} reshards, '
         f'{r["config"]["clients"]} clients, {r["config"]["size"]} B objects')


def mark_reshards(ax):
    for i, e in enumerate(evs):
        if e.get("objects_at_start"):
            ax.axvline(e["objects_at_start"], color="#ff7f0e", ls=":", lw=1,
                       label="reshard start" if i == 0 else None)
            ax.annotate(f'{e["from_shards"]}→{e["to_shards"] or "…"}', (e["objects_at_start"], 0.98),
                        xycoords=("data", "axes fraction"), fontsize=7, rotation=90, va="top", ha="right")


fig, axs = plt.subplots(3, 1, figsize=(11, 12), sharex=True)
ax = axs[0]
# A round the previous RWLD phase's PUTs already reached has no fill.
filled = [x for x in rounds if x["fill_puts_per_sec"] > 0]
ax.plot([x["objects"] for x in filled], [x["fill_puts_per_sec"] for x in filled], "o-", label="fill PUT/s")
ax.plot(xs, [x["rwld_ops_per_sec"] for x in rounds], "s-", label="RWLD ops/s (70/20/5/5 GET/PUT/LIST/DELETE)")
ax.set_ylabel("operations per second")
ax.set_ylim(bottom=0)
mark_reshards(ax)
ax.legend(loc="lower left", fontsize=8)
ax.set_title(title, fontsize=10)

ax = axs[1]
for op, c in (("get", "#1f77b4"), ("put", "#2ca02c"), ("list", "#9467bd"), ("delete", "#d62728")):
    pts = [(x["objects"], x["rwld"][op]) for x in rounds if x.get("rwld") and op in x["rwld"]]
    if not pts:
        continue
    ax.plot([p[0] for p in pts], [p[1]["p50_ms"] for p in pts], "o-", color=c, label=f"{op} p50")
    ax.plot([p[0] for p in pts], [p[1]["p99_ms"] for p in pts], "x--", color=c, label=f"{op} p99")
ax.set_yscale("log")
ax.set_ylabel("RWLD latency (ms, log)")
mark_reshards(ax)
ax.legend(loc="upper left", fontsize=7, ncol=4)

ax = axs[2]
for k, lbl in (("start_ms", "from the start"), ("middle_prefix_ms", "middle prefix"), ("continuation_ms", "continuation token")):
    pts = [(x["objects"], x["list"][k]) for x in rounds if x.get("list") and x["list"].get(k)]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=lbl)
ax.set_ylabel("ListObjectsV2 page of 1000 (ms)")
ax.set_ylim(bottom=0)
ax.set_xscale("log")
ax.set_xlabel("objects in the bucket (log)")
mark_reshards(ax)
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()
fig.savefig(out + ".png", dpi=100)

# Timeline: fill PUTs per second (only fill seconds drawn), reshards shaded.
fill = r["fill_puts_per_sec"]
ph = r["phase_per_sec"]
fig, ax = plt.subplots(figsize=(13, 4.5))
t = [i for i in range(len(fill)) if i < len(ph) and ph[i] == "f"]
ax.plot(t, [fill[i] for i in t], ".", ms=2, color="#1f77b4", label="fill PUTs in each second")
for i, e in enumerate(evs):
    end = e["end_sec"] or len(fill)
    ax.axvspan(e["start_sec"], end, color="#ff7f0e", alpha=0.2, label="reshard" if i == 0 else None)
    wr = e.get("worst_window_ratio")
    ax.annotate(f'{e["from_shards"]}→{e["to_shards"] or "…"}' + (f'\nworst 10 s {wr:.2f}×' if wr else ""),
                (e["start_sec"], 0.97), xycoords=("data", "axes fraction"), fontsize=7, va="top")
for x in rounds:
    ax.axvline(x["fill_start_sec"], color="#999", lw=0.5)
ax.set_xlabel("seconds since start (grey lines: round starts; gaps: RWLD, listing, aging)")
ax.set_ylabel("PUT/s")
ax.set_ylim(bottom=0)
ax.set_title(f'{title}; worst 10 s window in a reshard {r["reshard_worst_window_ratio"]:.2f}× '
             f'(outside reshards {r.get("outside_worst_window_ratio", 0):.2f}×)', fontsize=9)
ax.legend(loc="lower left", fontsize=8)
rss = r.get("rss_mib_per_sec")  # reports since stop 44
if rss:
    ax2 = ax.twinx()
    ax2.plot(range(len(rss)), [v / 1024 for v in rss], "-", lw=0.8, color="#2ca02c", label="RSS (GiB)")
    ax2.set_ylabel("RSS (GiB)")
    ax2.set_ylim(bottom=0)
    ax2.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(out + "-timeline.png", dpi=100)
