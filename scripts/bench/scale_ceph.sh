#!/usr/bin/env bash
# The scale benchmark (issue 24) on the Ceph backend: a throwaway cluster
# (scripts/ceph/cluster.sh: 1 mon, 3 bluestore OSDs on 8 GiB sparse files),
# one `cairn serve --backend rados`, and `cairn bench scale` in HTTP mode
# against it (real SigV4 requests), filled in rounds with dynamic
# resharding, RWLD after each round, then a full ListObjectsV2 walk and
# `scripts/bench/admin_scale.sh` (bucket stats, reshard status, bucket list
# walk, a manual reshard).
#
# The cluster fills at a few hundred PUT/s on this 2-core machine, so the
# run is scaled: SCALE_CEPH_OBJS_PER_SHARD (default 10000, the server's
# max-objs-per-shard) makes the reshards of a 30M bucket (11 → 23 → ...)
# happen at a three-hundredth of the size.
#
# usage: flock /tmp/cairn-bench.lock scripts/bench/scale_ceph.sh
# env:   SCALE_CEPH_TARGETS (default 10k,20k,50k,100k,200k,300k),
#        SCALE_CEPH_RWLD (default 30s), SCALE_CEPH_CLIENTS (default 32),
#        SCALE_CEPH_OBJS_PER_SHARD (default 10000), SCALE_CEPH_MANUAL_SHARDS
#        (manual reshard target at the end, default 101; 0 skips it),
#        SCALE_CEPH_OUT (default docs/bench/scale-ceph.json),
#        CAIRN_CEPH_CONF (use this cluster instead of starting one).
# Needs: ceph-mon ceph-osd ceph-common librados-dev.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
targets=${SCALE_CEPH_TARGETS:-10k,20k,50k,100k,200k,300k}
rwld=${SCALE_CEPH_RWLD:-30s}
clients=${SCALE_CEPH_CLIENTS:-32}
per_shard=${SCALE_CEPH_OBJS_PER_SHARD:-10000}
manual=${SCALE_CEPH_MANUAL_SHARDS:-101}
out=$(realpath -m "${SCALE_CEPH_OUT:-docs/bench/scale-ceph.json}")
ak=SCALEKEY000000000CEPH
sk=scalesecret0000000000000000000000000CEPH
port=18101

work=$(mktemp -d /tmp/cairn-scaleceph-XXXXXX)
gw=
cluster_dir=
cleanup() {
	if [ -n "$gw" ]; then kill "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true; fi
	[ -n "$cluster_dir" ] && scripts/ceph/cluster.sh stop "$cluster_dir" >/dev/null
	rm -rf /tmp/cairn-scaleceph-last
	mkdir -p /tmp/cairn-scaleceph-last
	cp "$work"/*.log /tmp/cairn-scaleceph-last/ 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${CAIRN_CEPH_CONF:-}" ]; then
	conf=$CAIRN_CEPH_CONF
else
	cluster_dir=$work/ceph
	CEPH_MON_PORT=13340 CEPH_OSD_PORTS=17600-17799 scripts/ceph/cluster.sh start "$cluster_dir" | grep '^\['
	conf=$cluster_dir/ceph.conf
fi

go build -tags rados -o "$work/cairn" ./cmd/cairn
mkdir -p "$work/data"
CAIRN_ACCESS_KEY=$ak CAIRN_SECRET_KEY=$sk "$work/cairn" serve --backend rados --ceph-conf "$conf" \
	--ceph-pool-prefix scale. --data-dir "$work/data" --listen 127.0.0.1:$port \
	--max-objs-per-shard "$per_shard" --log-level warn 2>"$work/gateway.log" &
gw=$!
for _ in $(seq 300); do
	curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break
	kill -0 "$gw" || { tail -20 "$work/gateway.log" >&2; exit 1; }
	sleep 0.2
done

export CAIRN_ACCESS_KEY=$ak CAIRN_SECRET_KEY=$sk CAIRN_ENDPOINT=http://127.0.0.1:$port CAIRN_BIN=$work/cairn
"$work/cairn" bench scale --endpoint "$CAIRN_ENDPOINT" --gateway-pid "$gw" \
	--targets "$targets" --rwld "$rwld" --clients "$clients" --out "$out" | tee "$work/bench.log"
admin_out=${out%.json}-admin.json
scripts/bench/admin_scale.sh bench-scale "$manual" "$admin_out"
ceph -c "$conf" df -f json >"${out%.json}-df.json" 2>/dev/null || true
grep -E 'VmRSS|VmHWM' "/proc/$gw/status"
