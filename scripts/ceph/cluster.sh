#!/usr/bin/env bash
# Throwaway Ceph cluster for tests and benchmarks: 1 monitor + 3 OSDs on
# 127.0.0.1, auth disabled, everything (data, logs, sockets, pid files)
# under DIR.
#
#   scripts/ceph/cluster.sh start DIR   # writes DIR/ceph.conf, waits until usable
#   scripts/ceph/cluster.sh stop DIR    # stops the daemons started in DIR (by pid)
#   scripts/ceph/cluster.sh status DIR
#   scripts/ceph/cluster.sh stop-osd DIR N   # stop osd.N (SIGTERM: it marks itself down)
#   scripts/ceph/cluster.sh start-osd DIR N  # start osd.N again on its data
#
# Environment:
#   CEPH_MON_PORT   msgr2 port of the monitor (default 13300; v1 = port+1).
#                   Keep ports below 32768 (the kernel's ephemeral range).
#   CEPH_OSD_PORTS  "min-max" port range for OSDs (default 16800-16999)
#   CEPH_OSD_STORE  bluestore (default; 8 GiB sparse file per OSD) or memstore
#   CEPH_POOL_SIZE  default pool size (default 3, min_size 2; 1 = min_size 1)
#   CEPH_MGR=1      also start a ceph-mgr (health reports HEALTH_OK, +~150 MiB)
#   CEPH_LUA=1      load the lua object class (osd class load list += lua)
#   CEPH_RECOVERY_SLEEP  osd_recovery_sleep_hdd in seconds (default Ceph's
#                   0.1: the OSDs here are "hdd", so recovery runs at about
#                   7 objects/s; tests set 0 to keep recovery short)
#
# Needs Debian's ceph-mon ceph-osd ceph-common (ceph-mgr for CEPH_MGR=1).
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: $0 start|stop|status DIR, or stop-osd|start-osd DIR N"
cmd=$1
dir=$(realpath -m "$2")
conf=$dir/ceph.conf
t0=$(date +%s.%N)
elapsed() { printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)"; }
log() { echo "[$(elapsed)s] $*"; }

stop() {
	local f pid
	for f in "$dir"/run/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		if kill -0 "$pid" 2>/dev/null; then kill "$pid"; fi
	done
	for f in "$dir"/run/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
		rm -f "$f"
	done
}

case $cmd in
stop)
	stop
	log "stopped daemons in $dir"
	exit 0
	;;
status)
	exec ceph -c "$conf" -s
	;;
stop-osd)
	[ $# -eq 3 ] || die "usage: $0 stop-osd DIR N"
	f=$dir/run/osd.$3.pid
	[ -e "$f" ] || die "osd.$3 is not running in $dir"
	pid=$(cat "$f")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
	rm -f "$f"
	log "osd.$3 stopped"
	exit 0
	;;
start-osd)
	[ $# -eq 3 ] || die "usage: $0 start-osd DIR N"
	ceph-osd -c "$conf" -i "$3" || die "ceph-osd -i $3 failed (see $dir/log/osd.$3.log)"
	log "osd.$3 started"
	exit 0
	;;
start) ;;
*) die "unknown command $cmd" ;;
esac

for b in monmaptool ceph-mon ceph-osd ceph rados uuidgen; do
	command -v $b >/dev/null || die "$b not found: apt-get install -y ceph-mon ceph-osd ceph-common"
done
[ -e "$dir/run/mon.a.pid" ] && kill -0 "$(cat "$dir/run/mon.a.pid")" 2>/dev/null && die "a cluster is running in $dir (stop it first)"
rm -rf "$dir"
mkdir -p "$dir/run" "$dir/log" "$dir/mon.a"

port=${CEPH_MON_PORT:-13300}
osdports=${CEPH_OSD_PORTS:-16800-16999}
store=${CEPH_OSD_STORE:-bluestore}
size=${CEPH_POOL_SIZE:-3}
minsize=$(( size > 1 ? size - 1 : 1 ))
fsid=$(uuidgen)
classes="cephfs hello journal lock log numops otp rbd refcount rgw rgw_gc timeindex user version cas cmpomap queue 2pc_queue fifo"
[ "${CEPH_LUA:-0}" = 1 ] && classes="$classes lua"

cat >"$conf" <<CONF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]
public_network = 127.0.0.1/32
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
# With auth off, clients must agree on crc or they hang fetching the config.
ms_mon_client_mode = crc
ms_client_mode = crc
ms_service_mode = crc
ms_cluster_mode = crc
ms_mon_service_mode = crc
ms_mon_cluster_mode = crc
ms_bind_port_min = ${osdports%-*}
ms_bind_port_max = ${osdports#*-}
run_dir = $dir/run
pid_file = $dir/run/\$name.pid
log_file = $dir/log/\$name.log
mon_cluster_log_file = $dir/log/cluster.log
osd_pool_default_size = $size
osd_pool_default_min_size = $minsize
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
# one host: place replicas on different OSDs, not hosts
osd_crush_chooseleaf_type = 0
mon_allow_pool_delete = true
# the object layer allows 255-byte xattr names (RADOS default: 100)
osd_max_attr_name_len = 255
# faster pool creation and map propagation (tests create many pools)
paxos_propose_interval = 0.05
paxos_min_wait = 0.01
mon_max_pg_per_osd = 4000
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 2
mon_data_avail_crit = 1
auth_allow_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
osd_class_load_list = $classes
osd_class_default_list = $classes

[mon]
admin_socket = $dir/run/\$name.asok
mon_data = $dir/\$name

[osd]
admin_socket = $dir/run/\$name.asok
osd_data = $dir/\$name
osd_objectstore = $store
bluestore_block_size = 8589934592
bluestore_block_create = true
bluestore_fsck_on_mkfs = false
bluestore_fsck_on_mount = false
osd_memory_target = 1073741824
memstore_device_bytes = 4294967296
osd_op_num_shards = 2
osd_op_num_threads_per_shard = 2
osd_recovery_sleep_hdd = ${CEPH_RECOVERY_SLEEP:-0.1}

[mgr]
admin_socket = $dir/run/\$name.asok
mgr_data = $dir/\$name
CONF

log "conf $conf (fsid $fsid, $store, pool size $size)"
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" >"$dir/log/mkfs.mon.log" 2>&1 || { cat "$dir/log/mkfs.mon.log"; die "ceph-mon --mkfs failed"; }
ceph-mon -c "$conf" -i a || die "ceph-mon failed to start (see $dir/log/mon.a.log)"
for _ in $(seq 300); do
	ceph -c "$conf" --connect-timeout 5 mon stat >/dev/null 2>&1 && break
	sleep 0.1
done
ceph -c "$conf" --connect-timeout 5 mon stat >/dev/null || die "monitor not answering (see $dir/log/mon.a.log)"
log "monitor up"

if [ "${CEPH_MGR:-0}" = 1 ]; then
	mkdir -p "$dir/mgr.x"
	ceph-mgr -c "$conf" -i x || die "ceph-mgr failed"
fi

for i in 0 1 2; do
	(
		uuid=$(uuidgen)
		id=$(ceph -c "$conf" osd new "$uuid")
		mkdir -p "$dir/osd.$id"
		ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >"$dir/log/mkfs.osd.$id.log" 2>&1 || { cat "$dir/log/mkfs.osd.$id.log"; exit 1; }
		ceph-osd -c "$conf" -i "$id"
	) &
done
wait || die "an OSD failed to start (see $dir/log)"
log "OSDs started"

for _ in $(seq 600); do
	up=$(ceph -c "$conf" osd stat -f json 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s.get("num_up_osds",0), s.get("num_in_osds",0))' || echo "0 0")
	[ "$up" = "3 3" ] && break
	sleep 0.2
done
[ "$up" = "3 3" ] || die "OSDs not up+in after 120 s: $up"
log "3 OSDs up+in"

# Usable = a pool can be created and written.
ceph -c "$conf" osd pool create cairn-probe 8 >/dev/null 2>&1
echo probe | timeout 120 rados -c "$conf" -p cairn-probe put probe - || die "probe write failed"
ceph -c "$conf" osd pool delete cairn-probe cairn-probe --yes-i-really-really-mean-it >/dev/null 2>&1
log "ready: export CAIRN_CEPH_CONF=$conf"
