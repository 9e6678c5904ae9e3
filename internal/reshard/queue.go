package reshard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// The reshard queue: one object in pool default.rgw.log, namespace
// "reshard", whose omap maps a bucket name to its queued reshard. An entry
// is written before the reshard is recorded in the instance and removed
// after the record is cleared, so a record always has an entry and Process
// finds every reshard a dead gateway left behind. An entry whose FromGen is
// older than the bucket's generation is finished and dropped.
const (
	queueNamespace = "reshard"
	queueOID       = "reshard_queue"
)

type queueEntry struct {
	Bucket    string    `json:"bucket"`
	BucketID  string    `json:"bucket_id"`
	FromGen   uint64    `json:"from_gen"`
	NumShards int       `json:"num_shards"`
	Reason    string    `json:"reason"`
	Queued    time.Time `json:"queued"`
	Sizing    *Sizing   `json:"sizing,omitempty"` // dynamic: why NumShards
}

func (m *Manager) enqueue(ctx context.Context, qe queueEntry) error {
	b, _ := json.Marshal(qe)
	return m.queue.Operate(ctx, queueOID, objstore.NewWriteOp().SetOmap(objstore.KV{Key: qe.Bucket, Value: b}))
}

// dequeue removes bucket's entry if it is still the one for fromGen.
func (m *Manager) dequeue(ctx context.Context, bucket string, fromGen uint64) error {
	qe, ok, err := m.entry(ctx, bucket)
	if err != nil || !ok || qe.FromGen != fromGen {
		return err
	}
	raw, _ := json.Marshal(qe)
	op := objstore.NewWriteOp().OmapCmp(bucket, objstore.CmpEQ, raw).RmOmapKeys(bucket)
	err = m.queue.Operate(ctx, queueOID, op)
	if errors.Is(err, objstore.ErrCanceled) {
		return nil // replaced by a newer entry meanwhile
	}
	return err
}

func (m *Manager) entry(ctx context.Context, bucket string) (queueEntry, bool, error) {
	op := objstore.NewReadOp()
	vs := op.GetOmapValuesByKeys(bucket)
	err := m.queue.OperateRead(ctx, queueOID, op)
	if errors.Is(err, objstore.ErrNotFound) {
		return queueEntry{}, false, nil
	}
	if err != nil || len(vs.Pairs) == 0 {
		return queueEntry{}, false, err
	}
	var qe queueEntry
	if err := json.Unmarshal(vs.Pairs[0].Value, &qe); err != nil {
		return queueEntry{}, false, fmt.Errorf("reshard queue entry %q: %w", bucket, err)
	}
	return qe, true, nil
}

func (m *Manager) entries(ctx context.Context) ([]queueEntry, error) {
	var out []queueEntry
	after := ""
	for {
		op := objstore.NewReadOp()
		vs := op.GetOmapValues(after, "", 1000)
		err := m.queue.OperateRead(ctx, queueOID, op)
		if errors.Is(err, objstore.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, kv := range vs.Pairs {
			var qe queueEntry
			if err := json.Unmarshal(kv.Value, &qe); err != nil {
				return nil, fmt.Errorf("reshard queue entry %q: %w", kv.Key, err)
			}
			out = append(out, qe)
			after = kv.Key
		}
		if !vs.More {
			return out, nil
		}
	}
}
