package bucketindex

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// CopyLoad copies entries into a reshard's target shards in bulk, on a
// backend that loads omaps (objstore.OmapLoader, the embedded store):
// the pairs are staged per shard in key order and land in one ingest per
// chunk, then each shard's stats of the chunk are added by copy_stats.
// CopyIn's ops instead pass every pair through the WAL, the memtable and
// each compaction level, which at scale competes with the foreground for
// the disk.
//
// A load goes in chunks: Ingest loads what was staged since the last
// chunk, AddStats adds its stats, and staging goes on. Per shard, keys
// ascend across chunks too (Add refuses one that does not), so a later
// chunk never rewrites a key an earlier one loaded, nor one written into
// the shard since by a replay of that key range.
type CopyLoad struct {
	x      Index
	epoch  uint64
	ld     objstore.OmapLoader
	load   objstore.OmapLoad // the chunk being staged
	hdrs   []shardHeader     // its stats, per shard
	last   []string          // per shard: the last key staged in any chunk
	staged int
	// ingested: the chunk's pairs are loaded, its stats not yet added.
	ingested bool
}

// NewCopyLoad returns a bulk load into x's shards fenced by epoch, or nil
// when the backend cannot load omaps.
func (x Index) NewCopyLoad(ctx context.Context, epoch uint64) (*CopyLoad, error) {
	ld, ok := x.IO.(objstore.OmapLoader)
	if !ok {
		return nil, nil
	}
	load, err := ld.NewOmapLoad(ctx)
	if err != nil {
		return nil, err
	}
	n := x.Layout.NumShards
	return &CopyLoad{x: x, epoch: epoch, ld: ld, load: load, hdrs: make([]shardHeader, n), last: make([]string, n)}, nil
}

// Add stages pair (a source shard's entry, version record or null
// pointer, as RawEntries returns it) for shard i. Per shard, keys must
// ascend, across chunks too: the caller merges its sources in key order.
func (l *CopyLoad) Add(i int, kv objstore.KV) error {
	if l.ingested {
		return objstore.Errorf(objstore.ErrInvalid, "copy load: chunk ingested, its stats not added")
	}
	if err := validRecordKey(kv.Key); err != nil {
		return err
	}
	if kv.Key <= l.last[i] {
		return objstore.Errorf(objstore.ErrInvalid, "copy load: key %q for shard %d after %q", kv.Key, i, l.last[i])
	}
	if err := account(&l.hdrs[i], kv.Key, kv.Value, 1); err != nil {
		return err
	}
	if err := l.load.Add(l.x.shardOID(i), kv.Key, kv.Value); err != nil {
		return err
	}
	l.last[i] = kv.Key
	l.staged++
	return nil
}

// Staged is how many pairs the current chunk holds.
func (l *CopyLoad) Staged() int { return l.staged }

// Ingest loads the current chunk's pairs, if every shard still carries
// the load's epoch (a reshard that another owner took over loads
// nothing); AddStats must follow before anything more is staged. A crash
// between the two leaves shards with entries and no stats; a reshard
// interrupted before its switch redoes its copy from fresh targets.
func (l *CopyLoad) Ingest(ctx context.Context) error {
	if l.ingested {
		return objstore.Errorf(objstore.ErrInvalid, "copy load: chunk already ingested")
	}
	if l.epoch != 0 {
		for i := range l.hdrs {
			g := objstore.NewReadOp().CmpXattrU64(shardEpochXattr, objstore.CmpEQ, l.epoch)
			if err := l.load.Guard(l.x.shardOID(i), g); err != nil {
				return err
			}
		}
	}
	if err := l.load.Commit(ctx); err != nil {
		return err
	}
	l.ingested = true
	next, err := l.ld.NewOmapLoad(ctx)
	if err != nil {
		return err
	}
	l.load = next
	return nil
}

// AddStats adds each shard's stats of the ingested chunk (fenced by the
// epoch, as copy ops are) and opens the next chunk.
func (l *CopyLoad) AddStats(ctx context.Context) error {
	if !l.ingested {
		return objstore.Errorf(objstore.ErrInvalid, "copy load: no chunk ingested")
	}
	for i, h := range l.hdrs {
		if h.Stats == (Stats{}) && len(h.Classes) == 0 {
			continue
		}
		op := objstore.NewWriteOp()
		op.DeferSync = true // as CopyIn: durable with the switch's synced ops
		op.Exec(ClassName, "copy_stats", append(binary.AppendUvarint(nil, l.epoch), h.encode()...))
		if err := l.x.IO.Operate(ctx, l.x.shardOID(i), op); err != nil {
			return fmt.Errorf("copy stats into shard %d: %w", i, err)
		}
		l.hdrs[i] = shardHeader{}
	}
	l.ingested, l.staged = false, 0
	return nil
}

// Commit ingests the current chunk and adds its stats.
func (l *CopyLoad) Commit(ctx context.Context) error {
	if err := l.Ingest(ctx); err != nil {
		return err
	}
	return l.AddStats(ctx)
}

// Abort drops what was staged and not ingested.
func (l *CopyLoad) Abort() { l.load.Abort() }

// clsCopyStats adds the stats of a bulk-loaded copy to a fenced shard's
// header: uvarint epoch, then a header (docs/format/cls.md) whose stats
// and class stats are added.
func clsCopyStats(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	epoch, n := binary.Uvarint(in)
	if n <= 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "copy_stats: bad epoch")
	}
	d, err := decodeHeader(in[n:])
	if err != nil {
		return nil, err
	}
	h, err := fencedHeader(ctx, epoch)
	if err != nil {
		return nil, err
	}
	h.add(d.Stats)
	for _, c := range d.Classes {
		h.addClass([]byte(c.Class), c.NumObjects, c.Size, c.NumVersions, c.VersionSize, 1)
	}
	return nil, writeHeader(ctx, h)
}
