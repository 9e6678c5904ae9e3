// Package service is Cairn's notification service: topic and bucket
// notification storage, and the driver.Notifier the S3 write path calls.
//
// Storage (pool default.rgw.meta):
//
//	namespace "topics"         object "<tenant>:<topic>"  topic.Topic JSON
//	namespace "notifications"  object "<bucket>:<bucket id>"  config.Configuration JSON
//
// Configurations are keyed by bucket instance id as well as name, so a
// bucket deleted and re-created under the same name does not inherit them.
// Persistent topics own a sharded queue (internal/notify/queue), created
// before the topic record is written and removed before it is deleted, so
// a crash leaves at worst an empty, harmless queue that a retried create
// adopts or a retried delete removes.
//
// The write path: Reserve (before the S3 data write) finds the bucket's
// matching configurations through a short-TTL cache, reserves room on the
// key's shard of each persistent topic (a full shard fails the request
// with driver.ErrSlowDown, before anything is written), and notes the
// non-persistent topics. Commit (after the write, before the reply) builds
// one record per configuration and commits it durably; non-persistent
// topics are pushed synchronously and a failed push only gets logged and
// counted. Abort is idempotent. See docs/design/notifications.md.
package service
