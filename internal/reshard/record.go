package reshard

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
)

// State is a reshard's step, recorded in the bucket instance.
type State string

const (
	// StateCopy: target shards are (re)created, source shards set to log
	// every change, and entries copied. Resuming restarts this step.
	StateCopy State = "copy"
	// StateReplay: the copy is complete; logs are being replayed. Resuming
	// replays every log from the start (replay is idempotent).
	StateReplay State = "replay"
	// StateClosing: sources are being closed. From here the reshard only
	// goes forward: tail replay, then the switch.
	StateClosing State = "closing"
	// StateCleanup: the instance uses the target layout; source shards are
	// being removed (after their GC records moved to the target).
	StateCleanup State = "cleanup"
	// StateRollback: the reshard is being undone (cancel or failure):
	// sources reopened, targets removed.
	StateRollback State = "rollback"
)

// Record is the in-progress reshard kept in driver.Instance.Reshard.
type Record struct {
	State  State              `json:"state"`
	Source bucketindex.Layout `json:"source"`
	Target bucketindex.Layout `json:"target"`
	Reason string             `json:"reason"` // "dynamic" or "admin"
	// Owner is the gateway (Manager cookie) driving the reshard until Lease;
	// Epoch increases with every change of owner and fences shard writes.
	Owner   string    `json:"owner"`
	Lease   time.Time `json:"lease"`
	Epoch   uint64    `json:"epoch"`
	Started time.Time `json:"started"`
	// Cancel asks the owner to roll back (only before StateClosing).
	Cancel bool `json:"cancel,omitempty"`
	// Progress: entries copied so far out of Total (the source's entry
	// count when the copy started).
	Copied uint64 `json:"copied"`
	Total  uint64 `json:"total"`
	// Replayed holds, from StateClosing on, each source shard's last
	// replayed log sequence, so a resumed switch replays only the tail.
	Replayed []uint64 `json:"replayed,omitempty"`
	// Closing is set with StateClosing: sources may be closed by us, so a
	// rollback (a source reopened by someone else) reopens closed ones too.
	Closing bool `json:"closing,omitempty"`
	// Error is the last failure, shown by Status.
	Error string `json:"error,omitempty"`
	// Sizing: why a dynamic reshard chose Target.NumShards.
	Sizing *Sizing `json:"sizing,omitempty"`
}

func decodeRecord(raw json.RawMessage) (*Record, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("reshard record: %w", err)
	}
	return &r, nil
}

func (r *Record) encode() json.RawMessage {
	if r == nil {
		return nil
	}
	b, _ := json.Marshal(r)
	return b
}

// forwardOnly reports whether the reshard is past the point of no return.
func (r *Record) forwardOnly() bool { return r.State == StateClosing || r.State == StateCleanup }
