#!/usr/bin/env bash
# Persistent-notification benchmark (issue 5 item 10): PUT and DELETE at
# 4 KiB and 4 MiB without notifications and with a persistent topic of 1
# and of 11 queue shards, a real HTTP endpoint consuming the events, then a
# 60 s 11-shard 4 KiB PUT run for queue depth. One `cairn serve` on a fresh
# data dir (see internal/bench/notify.go for the layout). Writes
# docs/bench/notify.json and the generated part of docs/bench/notify.md.
#
# usage: scripts/bench/notify.sh          (about 12 minutes on 2 cores)
# env:   NOTIFYBENCH_ROUNDS (default 2), NOTIFYBENCH_DURATION (4 KiB cells,
#        default 20s), NOTIFYBENCH_LARGE_DURATION (4 MiB cells, default 5s;
#        4 MiB PUT cells keep their data until the end, ~150 MiB/s each),
#        NOTIFYBENCH_SOAK (default 60s), NOTIFYBENCH_CONCURRENCY (default
#        32), NOTIFYBENCH_WORK (parent of the data dir, picks the disk;
#        default the system temp dir), NOTIFYBENCH_OUT (default docs/bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${NOTIFYBENCH_OUT:-docs/bench}
make build >/dev/null
args=(--rounds "${NOTIFYBENCH_ROUNDS:-2}" --duration "${NOTIFYBENCH_DURATION:-20s}"
	--large-duration "${NOTIFYBENCH_LARGE_DURATION:-5s}" --soak "${NOTIFYBENCH_SOAK:-60s}"
	--concurrency "${NOTIFYBENCH_CONCURRENCY:-32}")
if [[ -n ${NOTIFYBENCH_WORK:-} ]]; then
	args+=(--data-dir "$NOTIFYBENCH_WORK")
fi
mkdir -p "$out"
# Bounded: the matrix and soak take ~12 min; give up after 40.
timeout 2400 bin/cairn bench notify "${args[@]}" --json "$out/notify.json" --md "$out/notify.md" | grep -v '^{'
