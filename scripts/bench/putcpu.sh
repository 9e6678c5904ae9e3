#!/usr/bin/env bash
# Gateway CPU per 4 KiB PUT under warp (issue 25 item 6): warp v1.0.0 put,
# 16 clients, signed streaming payload (minio-go's default over plain HTTP),
# against each target in turn, rounds alternating the order. The server's
# CPU (utime+stime from /proc/PID/stat) is read over a window in the middle
# of the run and divided by the PUTs warp completed in that window (its 1 s
# segments), so set-up, warm-up and warp's clean-up are not counted; CPU per
# op does not depend on how much CPU the server got on a shared machine.
#
#   flock /tmp/cairn-bench.lock scripts/bench/putcpu.sh [TARGET...]
#
# Targets (default: cairn null):
#   cairn          `cairn serve` on the embedded backend (BIN, default bin/cairn)
#   null           `cairn serve --backend null` (HTTP + SigV4 + checksums only)
#   base           a baseline build (BASE=path to another cairn binary)
#   minio          `minio server` (MINIO, default .cache/bin/minio)
#   cairn-rados    `cairn serve --backend rados` on CEPH_CONF (BIN built with -tags rados)
#   rgw            Debian's radosgw on CEPH_CONF (the same cluster)
# Env: ROUNDS (2), DURATION (warp, 25s), WINDOW (12 s), PORT (17850), OUT (JSON lines, default
# /tmp/putcpu.jsonl), WARP (default .cache/bin/warp: scripts/bench/install.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$root/bin/cairn}
WARP=${WARP:-$root/.cache/bin/warp}
MINIO=${MINIO:-$root/.cache/bin/minio}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-25s}
WINDOW=${WINDOW:-12}
OUT=${OUT:-/tmp/putcpu.jsonl}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(cairn null)
ak=putcpubenchkey00000A sk=putcpubenchsecret0000000000000000000000A
tck=$(getconf CLK_TCK)
work=$(mktemp -d /tmp/cairn-putcpu.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }

start() { # start TARGET PORT: sets pid
	local t=$1 port=$2 d=$work/$1
	rm -rf "$d" && mkdir -p "$d"
	case $t in
	cairn | base | null | cairn-rados)
		local b=$BIN extra=()
		[ "$t" = base ] && b=${BASE:?BASE=path to the baseline cairn binary}
		[ "$t" = null ] && extra=(--backend null)
		[ "$t" = cairn-rados ] && extra=(--backend rados --ceph-conf "${CEPH_CONF:?}" --ceph-pool-prefix "putcpu$RANDOM.")
		CAIRN_ACCESS_KEY=$ak CAIRN_SECRET_KEY=$sk "$b" serve "${extra[@]}" --data-dir "$d" \
			--listen 127.0.0.1:"$port" --log-level error 2>"$d.log" &
		pid=$! ;;
	minio)
		MINIO_ROOT_USER=$ak MINIO_ROOT_PASSWORD=$sk "$MINIO" server "$d" --address 127.0.0.1:"$port" \
			--console-address 127.0.0.1:$((port + 1)) >"$d.log" 2>&1 &
		pid=$! ;;
	rgw)
		radosgw -f -c "${CEPH_CONF:?}" -n client.rgw.putcpu --rgw-data "$d" --log-file "$d.log" \
			--rgw-frontends "beast endpoint=127.0.0.1:$port" >"$d.out" 2>&1 &
		pid=$!
		for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.2; done
		radosgw-admin -c "$CEPH_CONF" -n client.admin user create --uid putcpu --display-name putcpu \
			--access-key "$ak" --secret "$sk" >/dev/null 2>&1 || true ;;
	*) echo "putcpu.sh: unknown target $t" >&2; exit 2 ;;
	esac
	for _ in $(seq 300); do curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0; sleep 0.2; done
	echo "putcpu.sh: $t did not start" >&2; exit 1
}

cell() { # cell TARGET ROUND
	local t=$1 r=$2 port=${PORT:-17850} w=$work/warp.out
	start "$t" $port
	"$WARP" put --host 127.0.0.1:$port --access-key "$ak" --secret-key "$sk" --obj.size 4KiB \
		--concurrent 16 --duration "$DURATION" --noclear --bucket putcpu-b --benchdata "$work/warp-$t-$r" --json >"$w" 2>&1 &
	local wp=$!
	until grep -q "Benchmark starting" "$w" 2>/dev/null; do
		kill -0 $wp 2>/dev/null || { cat "$w" >&2; exit 1; }
		sleep 0.2
	done
	sleep 5
	local t0 t1 a b
	t0=$(date +%s.%N) a=$(cpu "$pid")
	sleep "$WINDOW"
	t1=$(date +%s.%N) b=$(cpu "$pid")
	wait $wp || true
	kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
	python3 - "$t" "$r" "$t0" "$t1" "$a" "$b" "$w" <<'PY' | tee -a "$OUT"
import json, sys, datetime
t, r = sys.argv[1], int(sys.argv[2])
t0, t1, a, b = map(float, sys.argv[3:7])
s = open(sys.argv[7]).read()
j = json.loads(s[s.index('\n{') + 1:s.rindex('}') + 1])
segs = j['operations'][0]['throughput']['segmented']['segments']
ops = 0.0
for g in segs:
    st = datetime.datetime.fromisoformat(g['start'][:26].rstrip('Z') + '+00:00').timestamp()
    ops += g['obj_per_sec'] * max(0.0, min(st + 1, t1) - max(st, t0))
print(json.dumps({"target": t, "round": r, "window_s": round(t1 - t0, 1), "ops_per_sec": round(ops / (t1 - t0)),
                  "server_cpu_us_per_put": round((b - a) / ops * 1e6), "loadavg_1m": float(open('/proc/loadavg').read().split()[0])}))
PY
}

for r in $(seq "$ROUNDS"); do
	order=("${targets[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = ${#targets[@]} - 1; i >= 0; i--)); do order+=("${targets[$i]}"); done
	fi
	for t in "${order[@]}"; do cell "$t" "$r"; done
done
