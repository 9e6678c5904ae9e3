#!/usr/bin/env bash
# A/B of 4 KiB PUT: the null gateway vs two Cairn builds (NEW, OLD), each
# on a fresh data dir, alternating in rounds so machine load hits all alike.
#
#   OLD=/tmp/cairn-old NEW=bin/cairn ROUNDS=2 DURATION=10s scripts/bench/put-ab.sh
#
# Prints "round name ops/s p50_ms p99_ms" per cell (cairn bench s3, 16 workers).
set -u
NEW=${NEW:-bin/cairn}; OLD=${OLD:?OLD=path to the baseline cairn binary}
ROUNDS=${ROUNDS:-2}; DURATION=${DURATION:-10s}
export CAIRN_ACCESS_KEY=benchadmin CAIRN_SECRET_KEY=benchsecret123
# Data on a real disk (WORK_DIR, default the current directory), not a tmpfs /tmp.
work=$(mktemp -d -p "${WORK_DIR:-$PWD}" put-ab.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait; rm -rf "$work"' EXIT
"$NEW" serve --backend null --data-dir "$work/null" --listen 127.0.0.1:17591 --log-level warn & pids+=($!)
"$NEW" serve --data-dir "$work/new" --listen 127.0.0.1:17592 --log-level warn & pids+=($!)
"$OLD" serve --data-dir "$work/old" --listen 127.0.0.1:17593 --log-level warn & pids+=($!)
sleep 3
for round in $(seq "$ROUNDS"); do
  for t in null:17591 new:17592 old:17593; do
    name=${t%%:*}; port=${t##*:}
    "$NEW" bench s3 --endpoint "http://127.0.0.1:$port" --op put --size 4KiB --concurrency 16 \
      --duration "$DURATION" --bucket "ab$round" 2>/dev/null | tail -1 |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], sys.argv[2], round(d["ops_per_sec"]), d["p50_ms"], d["p99_ms"])' "$round" "$name"
  done
done
