// Package queue is the two-phase-commit queue object class (class name
// "2pc_queue", after Ceph's cls_2pc_queue): one object per queue shard,
// bounded in bytes, where a writer reserves room before its S3 write,
// commits the event after it (or aborts), and a delivery manager lists,
// updates and removes entries.
//
// Layout (docs/format/cls.md): the omap header holds the counters (so stats
// is O(1)); entries are omap keys "e<16 hex seq>" in commit order, whose
// 16-hex part is the entry's marker; reservations are blocks of up to 64
// consecutive ids, "b<16 hex last id>" (resblock.go; "r<16 hex id>", one
// per reservation, from earlier binaries is still read).
// Data bytes count toward capacity; keys and per-entry metadata do not.
//
// Errors by method:
//
//	any      ErrNotFound  the object is not an initialised queue
//	init     ErrExists    already initialised; ErrInvalid for capacity 0
//	reserve  ErrNoSpace   used + reserved + bytes > capacity (RGW: 503 SlowDown)
//	commit   ErrNotFound  unknown or expired reservation
//	         ErrInvalid   more entries or bytes than reserved (reservation kept)
//	commit_batch          commit's and reserve's, of the first that fails;
//	                      ErrInvalid for an empty call or > MaxBatchRefills
//	abort    -            unknown id is success
//	update   ErrNotFound  entry gone
//	list, remove          ErrInvalid for a malformed marker
//
// Every method runs inside any WriteOp (list and stats also in a ReadOp),
// so delivery can fence each call with lock.AssertLocked.
package queue
