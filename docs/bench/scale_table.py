#!/usr/bin/env python3
"""Print a `cairn bench scale` report as Markdown tables (pasted into
docs/bench/scale.md). Usage: scale_table.py REPORT.json"""
import json
import statistics as st
import sys

r = json.load(open(sys.argv[1]))
print(f'Mode **{r["mode"]}**, {r["config"]["clients"]} clients, {r["config"]["size"]} B objects, '
      f'RWLD {r["config"]["rwld_sec"]:.0f} s per round; started {r["started_at"]}, last written {r["updated_at"]}'
      + (f'; {r["note"]}' if r.get("note") else "") + ".\n")
print("| top-level | value |\n|---|---|")
for k in ("objects", "reshards", "reshard_worst_window_ratio", "outside_worst_window_ratio", "rwld_ratio_final_vs_1m",
          "list_page_ratio_final_vs_1m", "aged_ratio", "max_rss_bytes"):
    v = r.get(k, 0)
    if k == "max_rss_bytes":
        v = f"{v / 2**20:.0f} MiB"
    elif isinstance(v, float):
        v = f"{v:.2f}"
    print(f"| `{k}` | {v} |")
print()
print("| target | objects | shards | fill PUT/s | fill p50/p99 ms | RWLD ops/s | GET p50/p99 | PUT p50/p99 | LIST p50/p99 | DELETE p50/p99 "
      "| list page start / prefix / token ms | RSS MiB | disk B/obj (index, data) |")
print("|" + "---|" * 13)
for x in r["rounds"]:
    w = x.get("rwld") or {}

    def pp(op):
        o = w.get(op)
        return f'{o["p50_ms"]:.1f} / {o["p99_ms"]:.0f}' if o else "–"
    li = x.get("list") or {}
    d = x.get("disk") or {}
    split = f' ({d.get("index_bytes_per_object", 0):.0f}, {d.get("data_bytes_per_object", 0):.0f})' if d.get("index_bytes") else ""
    done = "" if x.get("complete") else " (cut short)"
    print(f'| {x["target"]:,}{done} | {x["objects"]:,} | {x["shards"]} | {x["fill_puts_per_sec"]:.0f} | '
          f'{x["fill_put"]["p50_ms"]:.1f} / {x["fill_put"]["p99_ms"]:.0f} | {x.get("rwld_ops_per_sec", 0):.0f} | '
          f'{pp("get")} | {pp("put")} | {pp("list")} | {pp("delete")} | '
          f'{li.get("start_ms", 0):.1f} / {li.get("middle_prefix_ms", 0):.1f} / {li.get("continuation_ms", 0):.1f} | '
          f'{x.get("rss_bytes", 0) / 2**20:.0f} | {d.get("total_bytes_per_object", 0):.0f}{split} |')
print()
# Reshards: worst 10 s window, and the mean fill rate inside against the
# median second of the 60 fill seconds before.
fill, ph = r["fill_puts_per_sec"], r["phase_per_sec"]
fs = [(i, fill[i]) for i in range(1, len(fill) - 1) if ph[i] == "f" and ph[i - 1] == "f" and ph[i + 1] == "f"]
print("| reshard | objects at start | start s | duration s | copied | copy entries/s | block ms | worst 10 s window | mean inside / median before |")
print("|" + "---|" * 9)
for e in r["reshard_events"] or []:
    s, en = e["start_sec"], e["end_sec"] or None
    before = [n for (i, n) in fs if i < s][-60:]
    inside = [n for (i, n) in fs if s <= i < (en or 1e12)]
    paired = f"{st.mean(inside) / st.median(before):.2f}" if len(before) >= 20 and inside and st.median(before) > 0 else "–"
    dur = f"{en - s:.0f}" if en else "running"
    print(f'| {e["from_shards"]} → {e["to_shards"] or "…"} | {e.get("objects_at_start", 0):,} | {s:.0f} | {dur} | '
          f'{e.get("copied", 0):,} | {e.get("copy_entries_per_sec", 0):.0f} | {e.get("block_ms", 0):.0f} | '
          f'{e.get("worst_window_ratio", 0):.2f} ({e.get("windows", 0)} windows) | {paired} |')
a = r.get("aging")
if a:
    print(f'\nAging: {a["seconds"] / 60:.0f} min, first {a["first_ops_per_sec"]:.0f} ops/s, last {a["last_ops_per_sec"]:.0f} ops/s '
          f'(ratio {r["aged_ratio"]:.2f}); ops/minute {a["ops_per_minute"]}; objects at end {a["objects_at_end"]:,}.')
    print("\n| op | ops | ops/s | p50 ms | p99 ms |\n|---|---|---|---|---|")
    for op, o in sorted(a["ops"].items()):
        print(f'| {op} | {o["ops"]:,} | {o["ops_per_sec"]:.0f} | {o["p50_ms"]:.1f} | {o["p99_ms"]:.0f} |')
    if a.get("disk_per_minute"):
        d0, d1 = a["disk_per_minute"][0], a["disk_per_minute"][-1]
        print(f'\nDisk during aging: {d0["total_bytes"] / 2**20:.0f} → {d1["total_bytes"] / 2**20:.0f} MiB '
              f'({d0["total_bytes_per_object"]:.0f} → {d1["total_bytes_per_object"]:.0f} B/object)'
              + (f'; GC backlog {d0.get("gc_backlog")} → {d1.get("gc_backlog")}' if "gc_backlog" in d1 else "") + ".")
last = next((x for x in reversed(r["rounds"]) if x.get("disk", {}).get("lsm")), None)
if last:
    l = last["disk"]["lsm"]
    print(f'\nLSM at {last["objects"]:,} objects: write amplification {l["write_amp"]:.2f}, space amplification {l["space_amp"]:.2f}, '
          f'L0 sublevels {l["l0_sublevels"]}, compaction debt {l["compaction_debt_bytes"] / 2**20:.0f} MiB, '
          f'GC backlog {last["disk"].get("gc_backlog")}.')
# Item 6: the walks and the final manual reshard (driver mode).
w, v, f = r.get("walk"), r.get("walk_versions"), r.get("final_reshard")
if w or v or f:
    print("\n| listing / admin call | keys (expected) | pages | seconds | keys/s |\n|---|---|---|---|---|")
    if w:
        print(f'| ListObjectsV2 walk (bucket stats {w["bucket_stats_ms"]:.1f} ms) | {w["keys"]:,} ({w["expected_keys"]:,}) | {w["pages"]:,} | {w["seconds"]:.1f} | {w["keys_per_sec"]:.0f} |')
    if v:
        print(f'| ListObjectVersions walk | {v["live_keys"]:,} live of {v["versions"]:,} versions ({v["expected_keys"]:,}) | {v["pages"]:,} | {v["seconds"]:.1f} | {v["keys_per_sec"]:.0f} |')
    if f and f.get("walk"):
        fw = f["walk"]
        print(f'| ListObjectsV2 walk at {f["shards_after"]} shards | {fw["keys"]:,} ({fw["expected_keys"]:,}) | {fw["pages"]:,} | {fw["seconds"]:.1f} | {fw["keys_per_sec"]:.0f} |')
if f:
    print(f'\nFinal manual reshard {f["from_shards"]} → {f["shards_after"]} at {f["objects_before"]:,} objects: {f["seconds"]:.1f} s end to end; '
          f'copied {f["copied"]:,} entries in {f["copy_sec"]:.1f} s ({f["copy_entries_per_sec"]:.0f}/s); replayed {f["replayed"]:,} in '
          f'{f["replay_rounds"]} rounds + tail {f["tail_replayed"]:,}; writers blocked {f["block_ms"]:.1f} ms. '
          f'bucket stats {f["bucket_stats_before_ms"]:.1f} / {f["bucket_stats_after_ms"]:.1f} ms, reshard status '
          f'{f["reshard_status_before_ms"]:.1f} / {f["reshard_status_after_ms"]:.1f} ms (before / after).')
# Where the fill's per-second dips come from (fill seconds outside reshards).
n = r.get("fill_noise")
if n and n.get("seconds"):
    print(f'\nFill noise over {n["seconds"]} fill seconds outside reshards: mean {n["mean_puts_per_sec"]:.0f} PUT/s, '
          f'p10 {n["p10_puts_per_sec"]:.0f}; WAL fsync {n["wal_sync_mean_us"]:.0f} µs mean, {n["wal_syncs_per_put"]:.3f} fsyncs per PUT; '
          f'a synced commit {n.get("commit_mean_us", 0):.0f} µs in pebble, {n.get("sync_wait_mean_us", 0):.0f} µs of it in SyncWait.')
    print("\n| activity | seconds with | PUT/s with | seconds without | PUT/s without |\n|---|---|---|---|---|")
    for k in ("flush", "compaction", "gc"):
        s = n[k]
        print(f'| {k} | {s["seconds_with"]} | {s["mean_puts_per_sec_with"]:.0f} | {s["seconds_without"]} | {s["mean_puts_per_sec_without"]:.0f} |')
    print("\n| series | correlation with PUT/s |\n|---|---|")
    for k, c in sorted(n["correlation"].items(), key=lambda kv: kv[1]):
        print(f"| `{k}` | {c:+.2f} |")
