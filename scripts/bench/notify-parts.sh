#!/bin/bash
# CPU µs per delivered event by part, from a profile of
#   cairn bench notify --in-process --cpuprofile PROF --json JSON --modes shards=N ... (one cell)
# usage: scripts/bench/notify-parts.sh BIN PROF JSON   (BIN: the cairn binary that ran it)
# Parts are pprof cumulative times (they overlap: run contains flush and fill;
# runDeferred contains commitRound, which contains OperateMany); roles come from the bench's pprof labels.
set -euo pipefail
bin=$1 prof=$2 json=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
read -r n rate commits lists removals listrm < <(python3 -c "import json;c=json.load(open('$json'))['cells'][0];print(c['pushes_ok'],c['s3']['ops_per_sec'],c['commit_ops'],c['list_ops'],c['remove_ops'],c['list_remove_ops'])")
echo "events=$n put/s=$rate commit_ops=$commits lists=$lists removals=$removals list+rm=$listrm"
go tool pprof -top -cum -nodecount=5000 -nodefraction=0 -edgefraction=0 -unit=s "$bin" "$prof" 2>/dev/null >"$tmp/top"
go tool pprof -tags -unit=s "$bin" "$prof" 2>/dev/null >"$tmp/tags"
us() { python3 -c "print(round($1*1e6/$n,1))"; }
for role in gateway client receiver; do
	v=$(awk -v r="$role" '$NF==r {print $1; exit}' "$tmp/tags" | sed 's/ms$/e-3/;s/s$//')
	echo "role $role: $(us "${v:-0}") us/event"
done
P=github.com/cairn-s3/cairn/internal
for f in notify/delivery.'(*worker)'.push notify/delivery.'(*worker)'.pushBatch notify/delivery.'(*worker)'.run \
	notify/delivery.'(*worker)'.flush notify/delivery.'(*worker)'.fill notify/delivery.'(*worker)'.dispatch \
	notify/delivery.'(*worker)'.handle notify/delivery.'(*worker)'.add notify/queue.'(*Queues)'.runDeferred \
	notify/queue.'(*Queues)'.runGroup notify/queue.'(*Queues)'.commitRound objstore/embedded.'(*ioctx)'.OperateMany notify/service.'(*reservation)'.CommitDeferred notify/service.'(*reservation)'.Intent \
	notify/service.'(*reservation)'.record notify/service.'(*Service)'.Reserve notify/event.Unmarshal notify/event.AppendJSON \
	bench.'(*receiver)'.serve cls/lock.assertMethod cls/queue.commitBatchMethod; do
	v=$(awk -v f="$P/$f" '$6==f {sub(/s$/,"",$4); print $4; exit}' "$tmp/top")
	printf "%-50s %6s us/event\n" "$f" "$(us "${v:-0}")"
done
v=$(awk '$6=="runtime.gcBgMarkWorker" {sub(/s$/,"",$4); print $4; exit}' "$tmp/top")
printf "%-50s %6s us/event\n" "runtime.gcBgMarkWorker" "$(us "${v:-0}")"
