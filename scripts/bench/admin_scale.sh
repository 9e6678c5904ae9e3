#!/usr/bin/env bash
# Times radosgw-admin-style tools on one large bucket of a running gateway
# (issue 24 item 6): bucket stats, reshard status, a full `bucket list
# --bucket` walk (every index entry through the admin API, i.e. a
# ListObjectVersions walk) and a manual reshard, then stats again.
#
#   CAIRN_ENDPOINT=http://127.0.0.1:17480 CAIRN_ACCESS_KEY=... CAIRN_SECRET_KEY=... \
#     scripts/bench/admin_scale.sh BUCKET SHARDS [OUT.json]
#
# SHARDS 0 skips the reshard. Prints one JSON object (and writes it to OUT).
set -euo pipefail
bucket=${1:?bucket}
shards=${2:?shards (0: no reshard)}
out=${3:-/dev/null}
cairn=${CAIRN_BIN:-cairn}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

t0=$(now); "$cairn" admin bucket stats --bucket "$bucket" >"$tmp/stats1.json"; t1=$(now)
stats_s=$(secs "$t0" "$t1")
objects=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["usage"]["rgw.main"]["num_objects"])' "$tmp/stats1.json" 2>/dev/null ||
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("num_objects", 0))' "$tmp/stats1.json")
t0=$(now); "$cairn" admin reshard status --bucket "$bucket" >"$tmp/status.json" 2>&1 || true; t1=$(now)   # 404 NoSuchReshard when none runs
status_s=$(secs "$t0" "$t1")
t0=$(now); entries=$("$cairn" admin bucket list --bucket "$bucket" | grep -c '"name"'); t1=$(now)
list_s=$(secs "$t0" "$t1")
reshard='null'
if [ "$shards" != 0 ]; then
	t0=$(now); "$cairn" admin bucket reshard --bucket "$bucket" --num-shards "$shards" >"$tmp/reshard.json"; t1=$(now)
	reshard=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["wall_s"]=float(sys.argv[2]); print(json.dumps(d))' "$tmp/reshard.json" "$(secs "$t0" "$t1")")
fi
t0=$(now); "$cairn" admin bucket stats --bucket "$bucket" >"$tmp/stats2.json"; t1=$(now)
python3 - "$tmp" "$bucket" "$objects" "$stats_s" "$status_s" "$entries" "$list_s" "$reshard" "$(secs "$t0" "$t1")" <<'PY' | tee "$out"
import json, sys
tmp, bucket, objects, stats_s, status_s, entries, list_s, reshard, stats2_s = sys.argv[1:]
res = {
    "bucket": bucket,
    "objects": int(objects),
    "bucket_stats_s": float(stats_s),
    "reshard_status_s": float(status_s),
    "bucket_list_entries": int(entries),
    "bucket_list_s": float(list_s),
    "bucket_list_entries_per_s": round(int(entries) / max(float(list_s), 1e-9)),
    "reshard": json.loads(reshard),
    "bucket_stats_after_s": float(stats2_s),
    "stats_after": json.load(open(tmp + "/stats2.json")),
}
print(json.dumps(res, indent=2))
PY
