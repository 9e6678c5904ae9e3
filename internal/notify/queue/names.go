package queue

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Pool, namespace and registry object of the queues (RGW's layout).
const (
	Pool           = "default.rgw.log"
	Namespace      = "notif"
	RegistryObject = "queues_list_object"
)

// Name is a topic's queue name and the object name of its shard 0:
// "<tenant>:<topic>".
func Name(tenant, topic string) string { return tenant + ":" + topic }

// ShardOID names shard i of queue q: q for i = 0, "q.i" otherwise, so a
// topic created with one shard has RGW's single queue object name.
func ShardOID(q string, i int) string {
	if i == 0 {
		return q
	}
	return q + "." + strconv.Itoa(i)
}

// ShardOIDs lists the n shard object names of queue q in shard order.
func ShardOIDs(q string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = ShardOID(q, i)
	}
	return out
}

// ParseShardOID splits a shard object name into queue name and shard
// index. ok is false for names that are not shards (e.g. the registry).
func ParseShardOID(oid string) (q string, i int, ok bool) {
	if !strings.Contains(oid, ":") {
		return "", 0, false
	}
	base, suffix, dotted := strings.Cut(oid, ".")
	if !dotted {
		return oid, 0, true
	}
	n, err := strconv.Atoi(suffix)
	if err != nil || n <= 0 || strconv.Itoa(n) != suffix {
		return "", 0, false
	}
	return base, n, true
}

// ShardIndex is the shard of an event on key in bucket for a topic with n
// shards: FNV-1a 64-bit of "bucket:key", modulo n. Portable and fixed
// forever (see the package comment); n <= 0 is treated as 1.
func ShardIndex(bucket, key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(bucket))
	h.Write([]byte{':'})
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// Marker is a position in a whole (multi-shard) queue for Dump: "<shard>/<entry
// marker>", e.g. "3/000000000000002a". "" is the start.
type Marker string

func makeMarker(shard int, entry string) Marker {
	return Marker(strconv.Itoa(shard) + "/" + entry)
}

// ParseMarker splits a Dump marker; "" gives shard 0 and entry "".
func ParseMarker(m string) (shard int, entry string, err error) {
	if m == "" {
		return 0, "", nil
	}
	s, e, ok := strings.Cut(m, "/")
	n, aerr := strconv.Atoi(s)
	if !ok || aerr != nil || n < 0 {
		return 0, "", fmt.Errorf("queue: bad marker %q: want <shard>/<entry marker>", m)
	}
	return n, e, nil
}
