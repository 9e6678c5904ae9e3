#!/usr/bin/env bash
# RADOS round trips per S3 operation of one Cairn gateway on Ceph: runs
# warp put and get (4 KiB) against `cairn serve --backend rados` and
# prints, per case, the gateway's round trips per S3 op by pool, namespace
# and kind (/metrics cairn_rados_ops_total) beside the ops the OSDs served
# as primaries (perf dump op_w / op_r / op_rw). Counts, not throughput:
# any load will do, so by default the cluster is a memstore one under
# $TMPDIR. GET uses the objects the PUT case wrote.
#
# usage: scripts/ceph/roundtrips.sh
# env:   CAIRN_CEPH_CONF (use this cluster), RT_DURATION (per case, 10s),
#        RT_CONCURRENCY (8), RT_PORT (18101), CAIRN_BENCH_BIN (warp's dir),
#        RT_CASES (default "put put-topic get mixed"), RT_KEEP=1 (keep
#        warp's output), RT_NOTIF_SHARDS (the topic's shards, 11)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
dur=${RT_DURATION:-10s}
conc=${RT_CONCURRENCY:-8}
port=${RT_PORT:-18101}
bin=${CAIRN_BENCH_BIN:-$root/.cache/bin}
[ -x "$bin/warp" ] || { echo "roundtrips.sh: no warp: run scripts/bench/install.sh" >&2; exit 1; }
ak=RTKEY000000000000000 sk=rtsecret0000000000000000000000000000000
work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-rt-XXXXXX")
pids=()
cluster_dir=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "$cluster_dir" ] && scripts/ceph/cluster.sh stop "$cluster_dir" >/dev/null
	if [ -n "${RT_KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
if [ -n "${CAIRN_CEPH_CONF:-}" ]; then
	conf=$CAIRN_CEPH_CONF
	run_dir=$(dirname "$conf")/run
else
	cluster_dir=$work/ceph
	CEPH_OSD_STORE=memstore CEPH_MON_PORT=${RT_MON_PORT:-13350} CEPH_OSD_PORTS=${RT_OSD_PORTS:-17600-17799} \
		scripts/ceph/cluster.sh start "$cluster_dir" | grep '^\[' >&2
	conf=$cluster_dir/ceph.conf
	run_dir=$cluster_dir/run
fi
. "$(dirname "${BASH_SOURCE[0]}")/osdops.sh"
metrics() { curl -sf "http://127.0.0.1:$port/metrics" | grep '^cairn_rados_ops_total' || true; }
txnev() { curl -sf "http://127.0.0.1:$port/metrics" | grep '^cairn_rados_txn_events_total' || true; }

go build -tags rados -o "$work/cairn" ./cmd/cairn
go build -o "$work/receiver" ./scripts/ceph/receiver
rcv=$((port + 1))
"$work/receiver" --listen 127.0.0.1:$rcv 2>"$work/receiver.log" &
pids+=($!)
prefix=rt$$.
mkdir -p "$work/data"
CAIRN_ACCESS_KEY=$ak CAIRN_SECRET_KEY=$sk "$work/cairn" serve --backend rados --ceph-conf "$conf" \
	--ceph-pool-prefix "$prefix" --data-dir "$work/data" --listen 127.0.0.1:$port --metrics-public \
	--notif-shards "${RT_NOTIF_SHARDS:-11}" 2>"$work/cairn.log" &
pids+=($!)
for _ in $(seq 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.2; done
curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" || { tail -20 "$work/cairn.log" >&2; exit 1; }
# As in bench.sh: a persistent topic pushing to the receiver, subscribed by
# the bucket rt-topic (the put-topic case), present for every case.
awsc() {
	AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_EC2_METADATA_DISABLED=true \
		aws --endpoint-url "http://127.0.0.1:$port" --region default "$@"
}
arn=$(awsc sns create-topic --name rttopic \
	--attributes "{\"push-endpoint\": \"http://127.0.0.1:$rcv\", \"persistent\": \"true\"}" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["TopicArn"])')
awsc s3api create-bucket --bucket rt-topic >/dev/null
awsc s3api put-bucket-notification-configuration --bucket rt-topic --notification-configuration \
	"{\"TopicConfigurations\": [{\"Id\": \"n1\", \"TopicArn\": \"$arn\", \"Events\": [\"s3:ObjectCreated:*\"]}]}"

# runcase case bucket warp-subcommand [args]: prints the table
runcase() {
	local c=$1 b=$2 sub=$3
	shift 3
	local m0 m1 o0 o1 n
	m0=$(metrics)
	t0=$(txnev)
	o0=$(osdops)
	"$bin/warp" "$sub" --host "127.0.0.1:$port" --access-key "$ak" --secret-key "$sk" --concurrent "$conc" \
		--noclear --json --bucket "$b" --obj.size 4KiB --duration "$dur" --benchdata "$work/$c" "$@" >"$work/$c.out" 2>"$work/$c.err" ||
		{ echo "warp $c failed: $(tail -3 "$work/$c.err") $(tail -c 600 "$work/$c.out")" >&2; return 1; }
	m1=$(metrics)
	t1=$(txnev)
	o1=$(osdops)
	n=$(python3 -c '
import json, sys
s = open(sys.argv[1]).read()
d, _ = json.JSONDecoder().raw_decode(s[s.find("{"):])
print(sum(o.get("n", 0) for o in d.get("operations") or [] if sys.argv[2] in ("MIXED", o.get("type", "").upper())))' "$work/$c.out" "${sub^^}")
	python3 - "$c" "$n" "$o0" "$o1" <<PY
import sys
c, n = sys.argv[1], int(sys.argv[2])
o0, o1 = [list(map(int, x.split())) for x in sys.argv[3:5]]
def parse(t):
    m = {}
    for ln in t.splitlines():
        k, v = ln.rsplit(" ", 1)
        lab = dict(p.split("=", 1) for p in k[k.index("{") + 1:k.rindex("}")].replace('"', "").split(","))
        m[(lab["pool"], lab["namespace"], lab["op"])] = float(v)
    return m
a, b = parse("""$m0"""), parse("""$m1""")
print(f"== {c}: {n} S3 ops (warp's listing of the bucket included)")
print("| pool | namespace | kind | round trips | per S3 op |")
print("|---|---|---|---|---|")
tot = 0
for k in sorted(b):
    d = b[k] - a.get(k, 0)
    if d:
        tot += d
        print(f"| {k[0]} | {k[1] or '-'} | {k[2]} | {d:.0f} | {d / max(n, 1):.2f} |")
print(f"| all | | | {tot:.0f} | {tot / max(n, 1):.2f} |")
w, r, rw = (o1[i] - o0[i] for i in range(3))
print(f"OSDs (primaries): w {w / max(n,1):.2f}  r {r / max(n,1):.2f}  rw {rw / max(n,1):.2f} per S3 op")
ta, tb = {}, {}
for src, dst in (("""$t0""", ta), ("""$t1""", tb)):
    for ln in src.splitlines():
        k, v = ln.rsplit(" ", 1)
        dst[k[k.index('"') + 1:k.rindex('"')]] = float(v)
print("class transactions per S3 op: " + ", ".join(f"{k} {(tb[k] - ta.get(k, 0)) / max(n, 1):.2f}" for k in sorted(tb)))
PY
}
cases=" ${RT_CASES:-put put-topic get mixed} "
[[ $cases == *" put "* ]] && runcase put rt-bucket put
[[ $cases == *" put-topic "* ]] && runcase put-topic rt-topic put
# GET reads what the PUTs wrote (no prepare phase to count; a HEAD is
# the GET without its data read, see TestRoundTripsPerRequest).
[[ $cases == *" get "* ]] && runcase get rt-bucket get --list-existing
# The RGW mix on 500 objects (its prepare phase's 500 PUTs are counted too).
[[ $cases == *" mixed "* ]] && runcase mixed rt-mixed mixed --objects 500 --get-distrib 45 --put-distrib 35 --stat-distrib 15 --delete-distrib 5
