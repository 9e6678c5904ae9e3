#!/usr/bin/env bash
# Cairn vs Debian's radosgw side by side on one Ceph cluster (issue 6 item
# 6), with warp: 4 KiB PUT into a bucket without notifications and into one
# with a persistent topic (both gateways push to the same Go HTTP receiver,
# scripts/ceph/receiver), 4 KiB GETs of the objects the first case wrote,
# then `warp mixed` (4 KiB, the RGW mix). Cairn's own round trips per cell
# (its /metrics cairn_rados_ops_total) go beside the OSDs' op counts. Cells of
# one case run back to back (rgw, cairn, cairn, rgw ... ABBA per round), so
# drift in machine load hits both alike. Writes OUT/rados-bench.json and
# OUT/rados-bench.md (scripts/ceph/benchreport.py; CEPHBENCH_NAME renames).
#
# usage: flock /tmp/cairn-bench.lock scripts/ceph/bench.sh
# env:   CEPHBENCH_DURATION (per cell, default 20s), CEPHBENCH_CONCURRENCY
#        (default 32), CEPHBENCH_ROUNDS (default 1), CEPHBENCH_OUT (default
#        docs/bench), CAIRN_CEPH_CONF (use this cluster instead of starting
#        one with scripts/ceph/cluster.sh), CEPHBENCH_NOTIF_SHARDS (Cairn's
#        notif-shards for the topic, default 11), CEPHBENCH_NAME (report
#        file names OUT/NAME.{json,md}, default rados-bench), CEPHBENCH_CAIRN
#        (a cairn binary built with -tags rados, instead of building this tree).
# Needs: ceph-mon ceph-osd ceph-common radosgw librados-dev, the aws CLI,
#        warp (scripts/bench/install.sh puts it in .cache/bin).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${CEPHBENCH_OUT:-docs/bench}
dur=${CEPHBENCH_DURATION:-20s}
conc=${CEPHBENCH_CONCURRENCY:-32}
rounds=${CEPHBENCH_ROUNDS:-1}
nshards=${CEPHBENCH_NOTIF_SHARDS:-11}
bin=${CAIRN_BENCH_BIN:-$root/.cache/bin}
[ -x "$bin/warp" ] || { echo "bench.sh: no warp in $bin: run scripts/bench/install.sh" >&2; exit 1; }
command -v radosgw >/dev/null || { echo "bench.sh: apt-get install radosgw" >&2; exit 1; }
command -v aws >/dev/null || { echo "bench.sh: the aws CLI is needed (pip install awscli)" >&2; exit 1; }

work=$(mktemp -d /tmp/cairn-cephbench-XXXXXX)
res=$work/results
mkdir -p "$res"
ak=BENCHKEY0000000000AA
sk=benchsecret000000000000000000000000000AA
rgw_port=18000 cairn_port=18001 rcv_port=18080
declare -A port=([rgw]=$rgw_port [cairn]=$cairn_port)
pids=()
cluster_dir=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "$cluster_dir" ] && scripts/ceph/cluster.sh stop "$cluster_dir" >/dev/null
	# Raw warp output and logs of the last run stay for inspection.
	rm -rf /tmp/cairn-cephbench-last
	mv "$res" /tmp/cairn-cephbench-last 2>/dev/null || true
	cp "$work"/*.log /tmp/cairn-cephbench-last/ 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${CAIRN_CEPH_CONF:-}" ]; then
	conf=$CAIRN_CEPH_CONF
	run_dir=$(dirname "$conf")/run
else
	cluster_dir=$work/ceph
	CEPH_MON_PORT=13330 CEPH_OSD_PORTS=17400-17599 scripts/ceph/cluster.sh start "$cluster_dir" | grep '^\['
	conf=$cluster_dir/ceph.conf
	run_dir=$cluster_dir/run
fi

. "$(dirname "${BASH_SOURCE[0]}")/osdops.sh"

if [ -n "${CEPHBENCH_CAIRN:-}" ]; then
	cp "$CEPHBENCH_CAIRN" "$work/cairn"
else
	go build -tags rados -o "$work/cairn" ./cmd/cairn
fi
go build -o "$work/receiver" ./scripts/ceph/receiver
"$work/receiver" --listen 127.0.0.1:$rcv_port 2>"$work/receiver.log" &
pids+=($!)

# radosgw: one instance, its default zone's pools (created on first start).
mkdir -p "$work/rgw"
radosgw -f -c "$conf" -n client.rgw.bench --rgw-data "$work/rgw" --log-file "$work/rgw.log" \
	--rgw-frontends "beast endpoint=127.0.0.1:$rgw_port" >"$work/rgw.out" 2>&1 &
pids+=($!)
# Cairn: one gateway, its pools under the prefix "cairn." (no clash with RGW's).
mkdir -p "$work/cairn-data"
CAIRN_ACCESS_KEY=$ak CAIRN_SECRET_KEY=$sk "$work/cairn" serve --backend rados --ceph-conf "$conf" \
	--ceph-pool-prefix cairn. --data-dir "$work/cairn-data" --listen 127.0.0.1:$cairn_port --metrics-public --notif-shards "$nshards" 2>"$work/cairn.log" &
pids+=($!)

for _ in $(seq 300); do
	curl -s -o /dev/null "http://127.0.0.1:$rgw_port/" && curl -sf -o /dev/null "http://127.0.0.1:$cairn_port/healthz" && break
	sleep 0.2
done
curl -s -o /dev/null "http://127.0.0.1:$rgw_port/" || { tail -20 "$work/rgw.log" >&2; exit 1; }
curl -sf -o /dev/null "http://127.0.0.1:$cairn_port/healthz" || { tail -20 "$work/cairn.log" >&2; exit 1; }
radosgw-admin -c "$conf" -n client.admin user create --uid bench --display-name bench \
	--access-key "$ak" --secret "$sk" >/dev/null

awsc() { # target args...
	local t=$1
	shift
	AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_EC2_METADATA_DISABLED=true \
		aws --endpoint-url "http://127.0.0.1:${port[$t]}" --region default "$@"
}

# Buckets: put-none (no notifications), put-topic (ObjectCreated to a
# persistent topic pushing to the receiver), mixed (none).
for t in rgw cairn; do
	arn=$(awsc $t sns create-topic --name benchtopic \
		--attributes "{\"push-endpoint\": \"http://127.0.0.1:$rcv_port\", \"persistent\": \"true\"}" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["TopicArn"])')
	for b in put-none put-topic mixed; do awsc $t s3api create-bucket --bucket "$b-$t" >/dev/null; done
	awsc $t s3api put-bucket-notification-configuration --bucket "put-topic-$t" --notification-configuration \
		"{\"TopicConfigurations\": [{\"Id\": \"n1\", \"TopicArn\": \"$arn\", \"Events\": [\"s3:ObjectCreated:*\"]}]}"
done

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# radosops: Cairn's round trips by pool/namespace/kind (cairn_rados_ops_total).
radosops() {
	curl -sf "http://127.0.0.1:$cairn_port/metrics" | python3 -c '
import json, re, sys
m = {}
for ln in sys.stdin:
    if ln.startswith("cairn_rados_ops_total{"):
        lab = dict(re.findall(r"(\w+)=\"([^\"]*)\"", ln))
        m[lab["pool"] + "/" + lab["namespace"] + "/" + lab["op"]] = int(float(ln.rsplit(" ", 1)[1]))
print(json.dumps(m))' || echo '{}'
}
counts() { curl -sf "http://127.0.0.1:$rcv_port/counts"; }

# cell target case bucket warp-subcommand [warp args...]
cell() {
	local t=$1 c=$2 b=$3 sub=$4 f
	shift 4
	f=$res/$c-$t-r$round
	local before
	before=$(counts | python3 -c "import json,sys; print(json.load(sys.stdin).get('$b', 0))")
	echo "== round $round $c $t (load $(loadavg))" >&2
	echo "{\"target\": \"$t\", \"case\": \"$c\", \"round\": $round, \"duration\": \"$dur\", \"load_before\": \"$(loadavg)\", \"started\": \"$(date -u +%FT%TZ)\"}" >"$f.meta"
	local o0 o1 g0 g1
	o0=$(osdops)
	g0=$(radosops)
	timeout 600 "$bin/warp" "$sub" --host "127.0.0.1:${port[$t]}" --access-key "$ak" --secret-key "$sk" \
		--concurrent "$conc" --noclear --json --bucket "$b" --benchdata "$f" --obj.size 4KiB \
		--duration "$dur" "$@" >"$f.out" 2>"$f.err" || echo "bench.sh: warp $c $t failed, see $f.err" >&2
	echo "{\"load_after\": \"$(loadavg)\"}" >>"$f.meta"
	o1=$(osdops)
	g1=$(radosops)
	python3 -c '
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
d = {k: v - a.get(k, 0) for k, v in b.items() if v - a.get(k, 0)}
print(json.dumps({"cairn_rados_ops": d}))' "$g0" "$g1" >>"$f.meta"
	read -r w0 r0 rw0 <<<"$o0"
	read -r w1 r1 rw1 <<<"$o1"
	echo "{\"osd_op_w\": $((w1 - w0)), \"osd_op_r\": $((r1 - r0)), \"osd_op_rw\": $((rw1 - rw0))}" >>"$f.meta"
	if [ "$c" = put-topic ]; then
		# Delivery after the PUTs stop: wait until the receiver's count for
		# the bucket stops growing (drain), record count and drain time.
		# (RGW delivers in bursts: "stopped" = no change for 15 s.)
		local t0=$SECONDS prev=-1 n last=$SECONDS
		while :; do
			n=$(counts | python3 -c "import json,sys; print(json.load(sys.stdin).get('$b', 0))")
			if [ "$n" != "$prev" ]; then prev=$n last=$SECONDS; fi
			[ $((SECONDS - last)) -ge 15 ] && break
			[ $((SECONDS - t0)) -gt 300 ] && break
			sleep 1
		done
		echo "{\"events_received\": $((n - before)), \"drain_seconds\": $((last - t0))}" >>"$f.meta"
	fi
}

mix=(--get-distrib 45 --put-distrib 35 --stat-distrib 15 --delete-distrib 5)
started=$(date -u +%FT%TZ)
up0=$(uptime)
for round in $(seq "$rounds"); do
	if [ $((round % 2)) = 1 ]; then order="rgw cairn"; rev="cairn rgw"; else order="cairn rgw"; rev="rgw cairn"; fi
	for t in $order; do cell "$t" put-none "put-none-$t" put; done
	# GETs of what the PUTs wrote: no prepare phase in the cell's counts.
	for t in $rev; do cell "$t" get "put-none-$t" get --list-existing; done
	for t in $rev; do cell "$t" put-topic "put-topic-$t" put; done
	for t in $order; do cell "$t" mixed "mixed-$t" mixed --objects 2500 "${mix[@]}"; done
done

mkdir -p "$out"
ceph -c "$conf" osd pool ls detail >"$res/pools.txt" 2>&1 || true
python3 scripts/ceph/benchreport.py "$res" "$out" \
	--command "flock /tmp/cairn-bench.lock scripts/ceph/bench.sh (CEPHBENCH_DURATION=$dur CEPHBENCH_CONCURRENCY=$conc CEPHBENCH_ROUNDS=$rounds CEPHBENCH_NOTIF_SHARDS=$nshards)" --uptime "$up0" "$(uptime)" \
	--started "$started" --commit "${CEPHBENCH_COMMIT:-$(git rev-parse --short HEAD)}" --name "${CEPHBENCH_NAME:-rados-bench}"
