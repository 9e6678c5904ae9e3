#!/bin/bash
# 4 KiB PUT rate of a gateway whose periodic orphan scan runs back to back
# (--orphan-scan-interval 2s, paced at --orphan-scan-rate) vs one without the
# job, side by side on equally filled stores; interleaved slices.
export CAIRN_ACCESS_KEY=BENCHKEY000000000000 CAIRN_SECRET_KEY=benchsecret00000000000000000000000000000
B=${B:-/tmp/orph-bench}  # a directory holding cairn-branch
declare -A port=([job]=17551 [nojob]=17552) pid
for m in job nojob; do
  d=$(mktemp -d $B/data.XXXX); dirs="$dirs $d"
  extra="--orphan-scan-interval 0"; [ $m = job ] && extra="--orphan-scan-interval 2s --orphan-min-age 1m --orphan-scan-rate ${RATE:-1000}"
  $B/cairn-branch serve --data-dir $d --listen 127.0.0.1:${port[$m]} --log-level info $extra > $B/$m.log 2>&1 &
  pid[$m]=$!
done
for m in job nojob; do for i in $(seq 100); do curl -sf http://127.0.0.1:${port[$m]}/healthz >/dev/null && break; sleep 0.1; done; done
for m in job nojob; do
  $B/cairn-branch bench s3 --endpoint http://127.0.0.1:${port[$m]} --op put --size 4KiB --concurrency 16 --duration 15s 2>/dev/null | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('fill $m', d['ops'])"
done
sleep 60   # let the fill age past orphan-min-age: the job then checks every run against the index
for r in $(seq ${SLICES:-8}); do
  o="job nojob"; [ $((r % 2)) = 0 ] && o="nojob job"
  for m in $o; do
    j=$($B/cairn-branch bench s3 --endpoint http://127.0.0.1:${port[$m]} --bucket during --op put --size 4KiB --concurrency 16 --duration ${DUR:-5s} 2>/dev/null | tail -1)
    echo "$r $m $(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['ops'], d['seconds'])" "$j")"
  done
done
for m in job nojob; do kill ${pid[$m]}; wait ${pid[$m]}; done
grep '"orphan scan"' $B/job.log | tail -3
rm -rf $dirs
