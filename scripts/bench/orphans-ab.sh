#!/bin/bash
# Interleaved 4 KiB PUT slices against three gateways kept up side by side:
# main (before), branch (scanner design), intent (prototype: a synced write
# intent before the data). Rotated order, SLICES rounds of DUR each.
export CAIRN_ACCESS_KEY=BENCHKEY000000000000 CAIRN_SECRET_KEY=benchsecret00000000000000000000000000000
B=${B:-/tmp/orph-bench}  # a directory holding cairn-main,-branch,-intent
declare -A port=([main]=17531 [branch]=17532 [intent]=17533) pid tot secs
for b in main branch intent; do
  d=$(mktemp -d $B/data.XXXX); dirs="$dirs $d"
  extra=""; [ $b != main ] && extra="--orphan-scan-interval 0"
  $B/cairn-$b serve --data-dir $d --listen 127.0.0.1:${port[$b]} --log-level error $extra 2>/dev/null &
  pid[$b]=$!
done
for b in main branch intent; do for i in $(seq 100); do curl -sf http://127.0.0.1:${port[$b]}/healthz >/dev/null && break; sleep 0.1; done; done
orders=("main branch intent" "branch intent main" "intent main branch" "main intent branch" "intent branch main" "branch main intent")
for r in $(seq ${SLICES:-12}); do
  for b in ${orders[$((r % 6))]}; do
    j=$($B/cairn-branch bench s3 --endpoint http://127.0.0.1:${port[$b]} --op put --size 4KiB --concurrency 16 --duration ${DUR:-4s} 2>/dev/null | tail -1)
    ops=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['ops'], d['seconds'])" "$j")
    echo "$r $b $ops"
  done
done
for b in main branch intent; do kill ${pid[$b]}; wait ${pid[$b]}; done
rm -rf $dirs
