#!/usr/bin/env bash
# Persistent-notification benchmark (issue 5 item 10, issue 25): PUT and
# DELETE at 4 KiB and 4 MiB without notifications and with a persistent
# topic of 1 and of 11 queue shards, a real endpoint consuming the events,
# then a 60 s 11-shard 4 KiB PUT run for queue depth. One `cairn serve` on a
# fresh data dir (see internal/bench/notify.go for the layout).
#
# One run per endpoint kind in NOTIFYBENCH_ENDPOINTS:
#   http   the bench's in-process Go receiver; writes docs/bench/notify.json
#          and the generated part of docs/bench/notify.md
#   kafka  a private single-node Kafka (tests/brokers/kafka.sh, jars cached
#          under $CAIRN_CACHE); writes notify-kafka.json and notify-kafka.md
#   amqp   a private RabbitMQ node (tests/brokers/rabbitmq.sh, Debian's
#          rabbitmq-server); writes notify-amqp.json and notify-amqp.md
# Each broker starts just before its run and is stopped (by its pid) right
# after it, also when the script fails.
#
# usage: scripts/bench/notify.sh          (about 12 minutes per kind on 2 cores)
# env:   NOTIFYBENCH_ENDPOINTS (default "http"; e.g. "http kafka amqp"),
#        NOTIFYBENCH_ROUNDS (default 2), NOTIFYBENCH_DURATION (4 KiB cells,
#        default 20s), NOTIFYBENCH_LARGE_DURATION (4 MiB cells, default 5s;
#        4 MiB PUT cells keep their data until the end, ~150 MiB/s each),
#        NOTIFYBENCH_SOAK (default 60s), NOTIFYBENCH_CONCURRENCY (default
#        32), NOTIFYBENCH_SIZES, NOTIFYBENCH_OPS, NOTIFYBENCH_MODES (default
#        the bench's: 4KiB,4MiB; put,delete; none,shards=1,shards=11),
#        NOTIFYBENCH_WORK (parent of the data dirs, gateway's and brokers';
#        picks the disk; default the system temp dir), NOTIFYBENCH_OUT
#        (default docs/bench), NOTIFYBENCH_KAFKA_PORT (default 29092, and
#        +1), NOTIFYBENCH_AMQP_PORT (default 29672, and +1..+6),
#        NOTIFYBENCH_ARGS (more `cairn bench notify` flags, e.g.
#        "--in-process --cpuprofile /tmp/notify.pprof", or
#        "--gateway-profile-dir /tmp/prof" for a CPU profile of the gateway
#        process per cell, split by scripts/bench/gwcpu-split.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${NOTIFYBENCH_OUT:-docs/bench}
make build >/dev/null
args=(--rounds "${NOTIFYBENCH_ROUNDS:-2}" --duration "${NOTIFYBENCH_DURATION:-20s}"
	--large-duration "${NOTIFYBENCH_LARGE_DURATION:-5s}" --soak "${NOTIFYBENCH_SOAK:-60s}"
	--concurrency "${NOTIFYBENCH_CONCURRENCY:-32}")
[[ -n ${NOTIFYBENCH_SIZES:-} ]] && args+=(--sizes "$NOTIFYBENCH_SIZES")
[[ -n ${NOTIFYBENCH_OPS:-} ]] && args+=(--ops "$NOTIFYBENCH_OPS")
[[ -n ${NOTIFYBENCH_MODES:-} ]] && args+=(--modes "$NOTIFYBENCH_MODES")
# shellcheck disable=SC2206 # split on purpose
[[ -n ${NOTIFYBENCH_ARGS:-} ]] && args+=($NOTIFYBENCH_ARGS)
if [[ -n ${NOTIFYBENCH_WORK:-} ]]; then
	args+=(--data-dir "$NOTIFYBENCH_WORK")
fi
mkdir -p "$out"

brokers=$(mktemp -d "${NOTIFYBENCH_WORK:-${TMPDIR:-/tmp}}/cairn-notify-brokers-XXXXXX")
running=() # "script dir" of started brokers
stop_brokers() {
	local b
	for b in "${running[@]}"; do
		# shellcheck disable=SC2086
		tests/brokers/$b || true
	done
	running=()
}
cleanup() {
	stop_brokers
	rm -rf "$brokers"
}
trap cleanup EXIT

for kind in ${NOTIFYBENCH_ENDPOINTS:-http}; do
	base=notify-$kind
	extra=()
	case $kind in
	http)
		base=notify
		;;
	kafka)
		port=${NOTIFYBENCH_KAFKA_PORT:-29092}
		tests/brokers/kafka.sh install
		running+=("kafka.sh stop $brokers/kafka")
		tests/brokers/kafka.sh start "$brokers/kafka" "$port" >/dev/null
		extra=(--kafka-brokers "127.0.0.1:$port")
		;;
	amqp)
		port=${NOTIFYBENCH_AMQP_PORT:-29672}
		running+=("rabbitmq.sh stop $brokers/rabbitmq")
		tests/brokers/rabbitmq.sh start "$brokers/rabbitmq" "$port" >/dev/null
		extra=(--amqp-url "amqp://guest:guest@127.0.0.1:$port/")
		;;
	*)
		echo "notify.sh: endpoint kind $kind: want http, kafka or amqp" >&2
		exit 2
		;;
	esac
	echo "== endpoint kind $kind"
	# Bounded: the matrix and soak take ~12 min; give up after 40.
	timeout 2400 bin/cairn bench notify "${args[@]}" --endpoint-kind "$kind" "${extra[@]}" \
		--json "$out/$base.json" --md "$out/$base.md" | grep -v '^{'
	stop_brokers
done
