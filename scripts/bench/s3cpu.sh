#!/usr/bin/env bash
# s3cpu.sh BIN...: server CPU per operation (utime+stime from
# /proc/PID/stat before and after) and client CPU (/usr/bin/time), with
# `cairn bench s3 --concurrency 16` (PUT 4 KiB, GET 4 MiB), for the null and
# embedded backends of each cairn binary given (e.g. a build of an older
# commit and bin/cairn). CPU per op does not depend on how much CPU the
# server happened to get on a shared machine. Run it under the lock:
#   flock /tmp/cairn-bench.lock scripts/bench/s3cpu.sh OLD_BIN bin/cairn
set -u
dur=${DUR:-8s}
export CAIRN_ACCESS_KEY=benchadmin CAIRN_SECRET_KEY=benchsecret-0123456789
tck=$(getconf CLK_TCK)
cpu() { awk -v t=$tck '{print ($14+$15)/t}' /proc/$1/stat; }
for bin in "$@"; do
  w=$(mktemp -d /tmp/cairn-s3cpu.XXXXXX)
  for t in null embedded; do
    $bin serve --backend $t --data-dir $w/$t --listen 127.0.0.1:17495 --log-level error 2>$w/$t.log &
    sp=$!
    for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:17495/healthz && break; sleep 0.1; done
    for c in "put 4KiB" "get 4MiB"; do set -- $c
      a=$(cpu $sp)
      /usr/bin/time -f "%U %S" -o $w/time $bin bench s3 --endpoint http://127.0.0.1:17495 --access-key benchadmin --secret-key benchsecret-0123456789 \
        --concurrency 16 --bucket c-$1 --op $1 --size $2 --objects 200 --duration $dur >$w/out 2>/dev/null
      b=$(cpu $sp)
      tail -1 $w/out | python3 -c '
import json,sys
d=json.load(sys.stdin); a,b=float(sys.argv[1]),float(sys.argv[2]); u,s=map(float,open(sys.argv[3]).read().split())
print("%s %s %s %s: %.0f ops/s, server %.0f us/op, client %.0f us/op, load %s" % (sys.argv[4], sys.argv[5], d["op"], sys.argv[6], d["ops_per_sec"], (b-a)/d["ops"]*1e6, (u+s)/d["ops"]*1e6, open("/proc/loadavg").read().split()[0]))
' $a $b $w/time $(basename $bin) $t $2
    done
    kill $sp; wait $sp 2>/dev/null
  done
  rm -rf $w
done
