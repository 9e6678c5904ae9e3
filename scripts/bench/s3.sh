#!/usr/bin/env bash
# S3 gateway benchmarks in one run: Cairn (embedded backend, fresh data
# dir), the null gateway (`cairn serve --backend null`: same HTTP, SigV4 and
# checksum path, data discarded) and MinIO single-node (fresh dir), all on
# 127.0.0.1 for the whole run and loaded one at a time. Each case runs
# against the three back to back: warp put/get/delete at 4 KiB and 4 MiB,
# warp mixed (the RGW mix) on freshly filled buckets, an aging run, warp
# mixed again, and `cairn bench s3` for the same operations. Writes
# docs/bench/s3.json and the generated part of docs/bench/s3.md.
#
# usage: scripts/bench/s3.sh            (about 20 minutes on 2 cores)
# env:   S3BENCH_DURATION (warp, default 20s), S3BENCH_OWN_DURATION (cairn
#        bench s3, default 10s), S3BENCH_AGE_DURATION (each aging step,
#        default 20s), S3BENCH_CONCURRENCY (default 16), S3BENCH_*_OBJECTS
#        (prefill counts, see below), S3BENCH_TARGETS (default "null cairn
#        minio"), S3BENCH_WORK (scratch dir, default a new dir under /tmp;
#        the data dirs live there, so it picks the disk), S3BENCH_OUT
#        (default docs/bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=$root/.cache/bin
dur=${S3BENCH_DURATION:-20s}
own_dur=${S3BENCH_OWN_DURATION:-10s}
age_dur=${S3BENCH_AGE_DURATION:-20s}
conc=${S3BENCH_CONCURRENCY:-16}
# Object counts (smaller only for smoke runs of this script).
n_small=${S3BENCH_SMALL_OBJECTS:-2500}    # 4 KiB objects read by get/mixed
n_large=${S3BENCH_LARGE_OBJECTS:-200}     # 4 MiB objects read by get/mixed
n_del_small=${S3BENCH_DELETE_OBJECTS:-20000}
n_del_large=$((n_large * 2))
n_age=$((n_small * 2))
targets=${S3BENCH_TARGETS:-null cairn minio}
out=${S3BENCH_OUT:-$root/docs/bench}
work=${S3BENCH_WORK:-$(mktemp -d /tmp/cairn-s3bench.XXXXXX)}
res=$work/results
mkdir -p "$res" "$out"
ak=benchadmin
sk=benchsecret-0123456789
# Ports below the ephemeral range (32768+), where listeners fail at random.
declare -A port=([null]=17481 [cairn]=17482 [minio]=17483)

scripts/bench/install.sh
make -s build
cairn=$root/bin/cairn

declare -A pid=()
stop_servers() {
	local t
	for t in "${!pid[@]}"; do
		kill "${pid[$t]}" 2>/dev/null || true
	done
	for t in "${!pid[@]}"; do
		# Bounded wait: SIGTERM lets Cairn finish in-flight requests.
		for _ in $(seq 100); do kill -0 "${pid[$t]}" 2>/dev/null || break; sleep 0.1; done
		kill -9 "${pid[$t]}" 2>/dev/null || true
		unset "pid[$t]"
	done
}
trap stop_servers EXIT

start_server() { # target
	local t=$1 p=${port[$1]} dir=$work/data-$1 health
	rm -rf "$dir"
	mkdir -p "$dir" "$res/$t"
	case $t in
	null | cairn)
		local backend=embedded
		[[ $t == null ]] && backend=null
		CAIRN_ACCESS_KEY=$ak CAIRN_SECRET_KEY=$sk "$cairn" serve --backend "$backend" \
			--data-dir "$dir" --listen "127.0.0.1:$p" 2>"$res/$t/server.log" &
		pid[$t]=$!
		health=http://127.0.0.1:$p/healthz
		;;
	minio)
		MINIO_ROOT_USER=$ak MINIO_ROOT_PASSWORD=$sk MINIO_UPDATE=off MINIO_BROWSER=off \
			"$bin/minio" server --quiet --address "127.0.0.1:$p" --console-address "127.0.0.1:$((p + 1))" \
			"$dir" >"$res/$t/server.log" 2>&1 &
		pid[$t]=$!
		health=http://127.0.0.1:$p/minio/health/live
		;;
	*)
		echo "s3.sh: unknown target $t" >&2
		return 1
		;;
	esac
	for _ in $(seq 150); do
		curl -sf -o /dev/null "$health" && return 0
		kill -0 "${pid[$t]}" 2>/dev/null || break
		sleep 0.2
	done
	echo "s3.sh: $t did not become ready; log:" >&2
	tail -20 "$res/$t/server.log" >&2
	return 1
}

secs() { # 20s -> 20
	local d=$1
	case $d in *m) echo $((${d%m} * 60)) ;; *s) echo "${d%s}" ;; *) echo "$d" ;; esac
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# warp case sub [warp args...]: the same warp run against every target in
# turn, output kept for the report.
warp_each() {
	local c=$1 sub=$2 t f
	shift 2
	for t in $targets; do
		f=$res/$t/warp-$c
		echo "== $t warp $c" >&2
		echo "$c warp $t $(loadavg)" >>"$res/load.log"
		# Bounded: duration plus generous room for prefill.
		timeout $(($(secs "$dur") + 300)) "$bin/warp" "$sub" --host "127.0.0.1:${port[$t]}" \
			--access-key "$ak" --secret-key "$sk" --concurrent "$conc" --noclear --json \
			--bucket "warp-$c" --benchdata "$f" "$@" >"$f.out" 2>"$f.err" ||
			echo "s3.sh: warp $c against $t failed (rc $?), see $f.err" >&2
	done
}

# own case [cairn bench s3 args...]: the same for cairn bench s3.
own_each() {
	local c=$1 t f
	shift
	for t in $targets; do
		f=$res/$t/own-$c
		echo "== $t cairn-bench-s3 $c" >&2
		echo "$c own $t $(loadavg)" >>"$res/load.log"
		timeout $(($(secs "$own_dur") + 300)) "$cairn" bench s3 --endpoint "http://127.0.0.1:${port[$t]}" \
			--access-key "$ak" --secret-key "$sk" --concurrency "$conc" --bucket "own-$c" "$@" >"$f.out" 2>"$f.err" ||
			echo "s3.sh: cairn bench s3 $c against $t failed (rc $?), see $f.err" >&2
	done
}

mix=(--get-distrib 45 --put-distrib 35 --stat-distrib 15 --delete-distrib 5)

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$SECONDS
# All three run for the whole script, each on a fresh dir; every case runs
# against each target back to back, so drift in background load on this
# shared machine hits all three alike.
for t in $targets; do
	start_server "$t"
done

# Fresh stores: every case gets its own bucket and leaves its objects behind.
warp_each put-4k put --obj.size 4KiB --duration "$dur"
warp_each put-4m put --obj.size 4MiB --duration "$dur"
warp_each get-4k get --obj.size 4KiB --objects "$n_small" --duration "$dur"
warp_each get-4m get --obj.size 4MiB --objects "$n_large" --duration "$dur"
warp_each delete-4k delete --obj.size 4KiB --objects "$n_del_small" --batch 100 --duration "$dur"
warp_each delete-4m delete --obj.size 4MiB --objects "$n_del_large" --batch 4 --duration "$dur"
warp_each mixed-4k mixed --obj.size 4KiB --objects "$n_small" "${mix[@]}" --duration "$dur"
warp_each mixed-4m mixed --obj.size 4MiB --objects "$n_large" "${mix[@]}" --duration "$dur"
own_each put-4k --op put --size 4KiB --duration "$own_dur"
own_each put-4m --op put --size 4MiB --duration "$own_dur"
own_each get-4k --op get --size 4KiB --objects "$n_small" --duration "$own_dur"
own_each get-4m --op get --size 4MiB --objects "$n_large" --duration "$own_dur"
own_each delete-4k --op delete --size 4KiB --objects "$n_del_small" --duration "$own_dur"
own_each delete-4m --op delete --size 4MiB --objects "$n_del_large" --duration "$own_dur"
own_each mixed-4k --op mixed --size 4KiB --objects "$n_small" --duration "$own_dur"
own_each mixed-4m --op mixed --size 4MiB --objects "$n_large" --duration "$own_dur"
for t in $targets; do du -sk "$work/data-$t" | cut -f1 >"$res/$t/fresh-kib"; done

# Aging (see docs/bench/s3.md): on top of everything above, overwrite n_age
# small objects over and over (replaced data for the collector), then churn
# 4 KiB objects with a create/delete-heavy mix.
own_each age-overwrite --op overwrite --size 4KiB --objects "$n_age" --duration "$age_dur"
warp_each age-churn mixed --obj.size 4KiB --objects "$n_small" --get-distrib 10 --stat-distrib 10 \
	--put-distrib 40 --delete-distrib 40 --duration "$age_dur"
for t in $targets; do du -sk "$work/data-$t" | cut -f1 >"$res/$t/aged-kib"; done

# The RGW mix again, on freshly filled buckets in the aged stores.
warp_each mixed-4k-aged mixed --obj.size 4KiB --objects "$n_small" "${mix[@]}" --duration "$dur"
warp_each mixed-4m-aged mixed --obj.size 4MiB --objects "$n_large" "${mix[@]}" --duration "$dur"
own_each mixed-4k-aged --op mixed --size 4KiB --objects "$n_small" --duration "$own_dur"
own_each mixed-4m-aged --op mixed --size 4MiB --objects "$n_large" --duration "$own_dur"

for t in $targets; do
	ps -o rss= -p "${pid[$t]}" >"$res/$t/rss-kib" 2>/dev/null || true
done
stop_servers
for t in $targets; do rm -rf "$work/data-$t"; done

# A delete run can finish in well under a second (the null gateway drops
# 20000 objects in about 0.3 s), too short for warp's 1 s analysis
# segments: keep warp's raw DELETE records; the report computes their
# whole-run rate and latencies.
for f in "$res"/*/warp-delete-*.csv.zst; do
	[[ -e $f ]] || continue
	zstd -dcq "$f" | awk -F'\t' 'NR == 1 || $3 == "DELETE"' >"${f%.csv.zst}.delete.tsv" || true
done

# Machine facts for the report.
dev=$(df --output=source "$work" | tail -1)
blk=$(basename "$dev")
rot=$(cat "/sys/block/$blk/queue/rotational" 2>/dev/null || cat "/sys/block/${blk%%[0-9]*}/queue/rotational" 2>/dev/null || echo unknown)
{
	echo "started=$started"
	echo "elapsed_s=$((SECONDS - t0))"
	echo "nproc=$(nproc)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "mem=$(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "disk=$dev, $(df -h --output=size "$work" | tail -1 | tr -d ' ') $(df --output=fstype "$work" | tail -1), rotational=$rot"
	echo "kernel=$(uname -r)"
	echo "go=$(go version | cut -d' ' -f3)"
	echo "cairn_commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- cmd internal || echo '+uncommitted')"
	echo "warp=v1.0.0"
	echo "minio=$(go version -m "$bin/minio" 2>/dev/null | awk '$1 == "mod" {print $3; exit}')"
	echo "concurrency=$conc"
	echo "duration=$dur"
	echo "own_duration=$own_dur"
	echo "age_duration=$age_dur"
	echo "targets=$targets"
} >"$res/machine"

python3 scripts/bench/s3report.py "$res" "$out"
echo "s3.sh: results in $out/s3.json and $out/s3.md (raw output in $res)" >&2
