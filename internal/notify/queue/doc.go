// Package queue owns the layout of persistent topics' queues and the Go API
// that the write path (internal/notify/service), the delivery manager
// (internal/notify/delivery) and the admin API use on them.
//
// Layout (pool default.rgw.log, namespace "notif"):
//
//	:<topic>            shard 0 of topic <topic> (RGW's "<tenant>:<topic>", empty tenant)
//	:<topic>.<i>        shard i, 1 <= i < n
//	queues_list_object  the registry: omap key = queue name (":<topic>"),
//	                    value = shard count n as decimal ASCII
//
// Each shard is one object carrying the "2pc_queue" object class
// (internal/cls/queue). An event for object key K of bucket B goes to shard
// ShardIndex(B, K, n) = FNV-1a-64("B:K") mod n. The hash is fixed forever:
// a key's events must keep landing on one shard, in order, and other
// implementations (tools, a future C++ class) must compute the same shard.
//
// Topic names never contain '.', so shard names of different topics cannot
// collide (internal/notify/topic.ValidateName).
//
// The write path reserves room on a shard before the S3 data write and
// commits the event after it; Queues keeps a small per-shard pool of
// durable reservations so that, in steady state, a PUT costs one synced
// queue operation (commit + replenish) instead of two (reserve, commit).
// The durability argument is in pool.go and docs/design/notifications.md.
package queue
