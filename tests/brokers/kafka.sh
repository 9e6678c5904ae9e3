#!/usr/bin/env bash
# A private single-node Kafka (KRaft, broker+controller) on 127.0.0.1 for tests.
#
#   kafka.sh install            fetch the jars (Maven) into the cache; idempotent
#   kafka.sh start DIR PORT     format DIR, start the node, wait until ready,
#                               print its pid; the controller listens on PORT+1
#   kafka.sh stop DIR           stop the node started in DIR (by its pid file)
#
# The cache is $CAIRN_CACHE/kafka-<version>, default <repo>/.cache/kafka-<version>.
# Ports must stay below 32768: listeners inside the kernel's ephemeral range
# fail at random with "address in use".
set -euo pipefail

KAFKA_VERSION=${KAFKA_VERSION:-4.3.1}
LOG4J_VERSION=${LOG4J_VERSION:-2.24.3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${CAIRN_CACHE:-$root/.cache}/kafka-$KAFKA_VERSION
lib=$cache/lib

# alive: the process exists and is not a zombie (in a container nobody may
# reap it, and kill -0 succeeds on a zombie).
alive() {
	kill -0 "$1" 2>/dev/null || return 1
	[ "$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)" != Z ]
}

die() { echo "kafka.sh: $*" >&2; exit 1; }

install() {
	[ -f "$lib/.complete" ] && return 0
	command -v mvn >/dev/null || die "mvn not found (apt-get install -y maven)"
	command -v java >/dev/null || die "java not found (apt-get install -y openjdk-17-jre-headless)"
	mkdir -p "$cache"
	# A throwaway project whose only purpose is dependency resolution. The
	# version is pinned: ranges picked releases whose artifacts were not all
	# published. log4j-slf4j-impl is the logging binding; without one the
	# broker prints nothing and readiness cannot be observed.
	cat >"$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>cairn.test</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
	rm -rf "$lib.tmp"
	mvn -q -B -f "$cache/pom.xml" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$lib.tmp" >&2
	rm -rf "$lib" && mv "$lib.tmp" "$lib"
	touch "$lib/.complete"
}

start() {
	local dir=${1:?start DIR PORT} port=${2:?start DIR PORT}
	[ -f "$lib/.complete" ] || die "not installed: run '$0 install'"
	[ "$port" -lt 32767 ] || die "port $port must be below 32767 (ephemeral range)"
	local cport=$((port + 1))
	mkdir -p "$dir/data"
	dir=$(cd "$dir" && pwd)
	cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=3
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
	cat >"$dir/log4j2.properties" <<L4J
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
L4J
	local jvm=(java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
		"-Dlog4j2.configurationFile=$dir/log4j2.properties" -cp "$lib/*")
	if [ ! -f "$dir/data/meta.properties" ]; then
		# A KRaft cluster id is 16 random bytes in unpadded URL-safe base64.
		local id
		id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
		"${jvm[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" \
			>"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; die "format failed"; }
	fi
	# Empty the log first: the background job truncates it only once it
	# runs, and a restart's readiness check could meet the last run's line.
	: >"$dir/server.log"
	setsid "${jvm[@]}" kafka.Kafka "$dir/server.properties" >"$dir/server.log" 2>&1 </dev/null &
	local pid=$!
	echo "$pid" >"$dir/kafka.pid"
	# Ready when the broker says so (the listener socket is bound earlier).
	# The deadline is a net for a hung JVM, not the wait: at load average
	# 40 a start takes 60-70 s.
	local deadline=$((SECONDS + ${KAFKA_START_TIMEOUT:-600}))
	until grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -30 "$dir/server.log" >&2
			die "kafka exited during startup"
		fi
		[ $SECONDS -lt $deadline ] || { kill "$pid"; tail -30 "$dir/server.log" >&2; die "not ready after ${KAFKA_START_TIMEOUT:-600}s"; }
		sleep 0.2
	done
	echo "$pid"
}

stop() {
	local dir=${1:?stop DIR}
	[ -f "$dir/kafka.pid" ] || return 0
	local pid
	pid=$(cat "$dir/kafka.pid")
	if kill "$pid" 2>/dev/null; then
		# A graceful shutdown gets 60 s, then SIGKILL (the log is in the
		# page cache either way). Return only once the process is gone: a
		# restart on the same port and log dir must not meet it.
		local end=$((SECONDS + 60))
		while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		end=$((SECONDS + 60))
		while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
	fi
	rm -f "$dir/kafka.pid"
}

case "${1:-}" in
install) install ;;
start) shift; start "$@" ;;
stop) shift; stop "$@" ;;
*) die "usage: $0 install | start DIR PORT | stop DIR" ;;
esac
