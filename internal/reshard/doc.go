// Package reshard changes a bucket index's shard count online: writes,
// deletes and listings continue while a new index generation is built, and
// writers wait only for a brief, bounded switch.
//
// A reshard is a small state machine recorded in the bucket instance
// (driver.Instance.Reshard, written with version guards): copy → replay →
// closing → cleanup (or rollback). Source shards log every change while the
// copy runs; the log is replayed into the target generation; then the
// sources are closed (writers get ErrStale and re-read the layout), the last
// log records are replayed and the instance is switched to the target. A
// lease in the record lets exactly one gateway drive a bucket's reshard, and
// a fencing epoch stored on the shards stops a former owner's late writes.
// A crash at any step is resumed (or rolled back) by the next Manager that
// processes the reshard queue. See docs/design/resharding.md.
//
// The package owns the reshard queue (pool default.rgw.log, namespace
// "reshard"), the dynamic trigger (Manager with Config.Enabled) and the
// admin operations (Reshard, Enqueue, Status, List, Cancel, Process).
package reshard
