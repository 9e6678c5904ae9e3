// Package bucketindex owns a bucket's sharded index: shard objects
// .dir.<bucket_id>.<gen>.<shard> in default.rgw.buckets.index whose omap
// holds one entry per S3 object, the cairn_index object class that changes
// an entry atomically with its shard's stats (and records replaced data for
// garbage collection), and the ordered listing that merges every shard.
//
// The index is authoritative: an S3 object exists iff its entry does. Data
// objects are written first under unique names, then linked here in one
// atomic operation, so a crash leaves either the old object or the new one,
// never a listed-but-missing or stored-but-unlisted one.
package bucketindex
