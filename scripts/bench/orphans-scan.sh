#!/bin/bash
# Orphan scan throughput on a filled store, and the 4 KiB PUT rate while
# scans run back to back vs without (ABAB slices).
export CAIRN_ACCESS_KEY=BENCHKEY000000000000 CAIRN_SECRET_KEY=benchsecret00000000000000000000000000000
B=${B:-/tmp/orph-bench}; E=http://127.0.0.1:17541  # B holds cairn-branch
d=$(mktemp -d $B/data.XXXX)
$B/cairn-branch serve --data-dir $d --listen 127.0.0.1:17541 --log-level error --orphan-scan-interval 0 2>/dev/null &
pid=$!
for i in $(seq 100); do curl -sf $E/healthz >/dev/null && break; sleep 0.1; done
$B/cairn-branch bench s3 --endpoint $E --op put --size 4KiB --concurrency 16 --duration ${FILL:-20s} 2>/dev/null | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('fill', d['ops'], 'objects')"
for age in 0s 24h; do
  for k in 1 2; do
    s=$(date +%s.%N)
    out=$($B/cairn-branch admin --endpoint $E orphans find --min-age $age)
    e=$(date +%s.%N)
    echo "scan min-age=$age: $(echo "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); print('examined', d['examined'], 'young', d['young'], 'orphans', d['orphans'])") seconds $(python3 -c "print(round($e-$s,2))")"
  done
done
for r in 1 2 3 4; do
  for mode in off on; do
    [ $((r % 2)) = 0 ] && mode=$([ $mode = off ] && echo on || echo off)
    if [ $mode = on ]; then (while :; do $B/cairn-branch admin --endpoint $E orphans find --min-age 0s --max-entries 1 >/dev/null 2>&1; done) & lp=$!; fi
    j=$($B/cairn-branch bench s3 --endpoint $E --bucket during --op put --size 4KiB --concurrency 16 --duration ${DUR:-5s} 2>/dev/null | tail -1)
    if [ $mode = on ]; then kill $lp; wait $lp 2>/dev/null; fi
    echo "during-scan $r $mode $(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['ops'], d['seconds'])" "$j")"
  done
done
kill $pid; wait $pid; rm -rf $d
