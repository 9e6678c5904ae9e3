#!/usr/bin/env bash
# A private RabbitMQ node on 127.0.0.1 for tests, using Debian's rabbitmq-server
# binaries without touching /var/lib/rabbitmq or the system epmd.
#
#   rabbitmq.sh install           apt-get install rabbitmq-server (needs root)
#   rabbitmq.sh start DIR PORT    start a node in DIR; AMQP on PORT, Erlang
#                                 distribution on PORT+1, its own epmd on PORT+2,
#                                 CLI distribution on PORT+3..PORT+6; wait until
#                                 ready; print the node's pid
#   rabbitmq.sh stop DIR          stop the node and the epmd started in DIR
#
# Ports must stay below 32768: listeners inside the kernel's ephemeral range
# fail at random with eaddrinuse. The guest/guest user works from loopback.
set -euo pipefail

# alive: the process exists and is not a zombie (in a container nobody may
# reap it, and kill -0 succeeds on a zombie).
alive() {
	kill -0 "$1" 2>/dev/null || return 1
	[ "$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)" != Z ]
}

die() { echo "rabbitmq.sh: $*" >&2; exit 1; }

sbin() {
	local d
	for d in /usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin; do
		[ -x "$d/rabbitmqctl" ] && { echo "$d"; return 0; }
	done
	return 1
}

install() {
	sbin >/dev/null && return 0
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq rabbitmq-server >/dev/null
	# The package may start the system service where an init system exists;
	# tests never use it.
	sbin >/dev/null || die "rabbitmq-server installed but rabbitmqctl not found"
}

# env_for DIR PORT: the environment both the server and rabbitmqctl need.
env_for() {
	local dir=$1 port=$2
	export HOME=$dir # private Erlang cookie
	export RABBITMQ_NODENAME=cairn$port@localhost
	export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
	export RABBITMQ_NODE_PORT=$port
	export RABBITMQ_DIST_PORT=$((port + 1))
	export ERL_EPMD_ADDRESS=127.0.0.1
	export ERL_EPMD_PORT=$((port + 2))
	export RABBITMQ_CTL_DIST_PORT_MIN=$((port + 3))
	export RABBITMQ_CTL_DIST_PORT_MAX=$((port + 6))
	export RABBITMQ_CONF_ENV_FILE=$dir/rabbitmq-env.conf
	export RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf
	export RABBITMQ_ADVANCED_CONFIG_FILE=$dir/advanced.config
	export RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins
	export RABBITMQ_MNESIA_BASE=$dir/mnesia
	export RABBITMQ_LOG_BASE=$dir/log
	export RABBITMQ_PID_FILE=$dir/rabbitmq.pid
	# Bind Erlang distribution to loopback as well.
	export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

start() {
	local dir=${1:?start DIR PORT} port=${2:?start DIR PORT}
	local bin
	bin=$(sbin) || die "not installed: run '$0 install' (or apt-get install -y rabbitmq-server)"
	[ "$port" -lt 32760 ] || die "port $port must be below 32760 (ephemeral range)"
	mkdir -p "$dir/mnesia" "$dir/log"
	dir=$(cd "$dir" && pwd)
	env_for "$dir" "$port"
	: >"$RABBITMQ_CONF_ENV_FILE"
	echo "[]." >"$RABBITMQ_ENABLED_PLUGINS_FILE"
	echo "[]." >"$RABBITMQ_ADVANCED_CONFIG_FILE"
	cat >"$RABBITMQ_CONFIG_FILE" <<CONF
listeners.tcp.default = 127.0.0.1:$port
log.console = false
log.file.level = info
CONF
	# Our own epmd, so the node never registers with (or starts) a shared one.
	setsid epmd -address 127.0.0.1 -port "$ERL_EPMD_PORT" </dev/null >"$dir/log/epmd.log" 2>&1 &
	echo $! >"$dir/epmd.pid"
	setsid "$bin/rabbitmq-server" </dev/null >"$dir/log/server.out" 2>&1 &
	echo $! >"$dir/server.pid"
	# rabbitmqctl wait returns once the app is running (pid file written first).
	# The timeout is a net for a hung node, not the wait: a loaded machine
	# takes minutes.
	local i limit=${RABBITMQ_START_TIMEOUT:-600}
	for i in $(seq 1 $((limit * 10))); do [ -s "$RABBITMQ_PID_FILE" ] && break; sleep 0.1; done
	if ! "$bin/rabbitmqctl" wait --timeout "$limit" "$RABBITMQ_PID_FILE" >"$dir/log/wait.log" 2>&1; then
		tail -20 "$dir/log/server.out" "$dir/log/wait.log" >&2 || true
		stop "$dir"
		die "node did not become ready"
	fi
	echo "$(cat "$RABBITMQ_PID_FILE")"
}

stop() {
	local dir=${1:?stop DIR} f pid
	for f in rabbitmq.pid server.pid epmd.pid; do
		[ -f "$dir/$f" ] || continue
		pid=$(cat "$dir/$f")
		if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
			# Graceful for up to 60 s, then SIGKILL; return only once gone,
			# so a restart on the same port and data never meets it.
			local end=$((SECONDS + 60))
			while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
			kill -9 "$pid" 2>/dev/null || true
			end=$((SECONDS + 60))
			while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
		fi
		rm -f "$dir/$f"
	done
}

case "${1:-}" in
install) install ;;
start) shift; start "$@" ;;
stop) shift; stop "$@" ;;
*) die "usage: $0 install | start DIR PORT | stop DIR" ;;
esac
