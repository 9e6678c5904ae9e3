package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// DumpEntry is one committed entry as `topic dump` shows it.
type DumpEntry struct {
	// Marker resumes a dump after this entry: "<shard>/<entry marker>".
	Marker      string    `json:"marker"`
	Shard       int       `json:"shard"`
	Committed   time.Time `json:"committed"`
	Retries     uint32    `json:"retries"`
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	Data        []byte    `json:"-"`
}

// DumpPage is one page of Dump.
type DumpPage struct {
	Entries   []DumpEntry
	Next      string // pass as marker to continue; "" when done
	Truncated bool
}

// DefaultDumpMax is the page size when max <= 0.
const DefaultDumpMax = 1000

// Dump lists up to max committed entries of queue name (n shards), shard
// by shard and in commit order within a shard, starting after marker
// ("" = the beginning). It reads; it never removes.
func (q *Queues) Dump(ctx context.Context, name string, n int, marker string, max int) (DumpPage, error) {
	shard, after, err := ParseMarker(marker)
	if err != nil {
		return DumpPage{}, fmt.Errorf("%w: %v", objstore.ErrInvalid, err)
	}
	if after != "" {
		if _, err := clsq.ParseMarker(after); err != nil {
			return DumpPage{}, err
		}
	}
	if max <= 0 {
		max = DefaultDumpMax
	}
	var page DumpPage
	for ; shard < n; shard, after = shard+1, "" {
		oid := ShardOID(name, shard)
		for len(page.Entries) < max {
			want := min(max-len(page.Entries), clsq.MaxListMax)
			res, err := clsq.List(ctx, q.io, oid, after, want)
			if errors.Is(err, objstore.ErrNotFound) {
				break // a missing shard has nothing to show
			}
			if err != nil {
				return DumpPage{}, err
			}
			for _, e := range res.Entries {
				page.Entries = append(page.Entries, DumpEntry{
					Marker: string(makeMarker(shard, e.Marker)), Shard: shard, Committed: e.Committed,
					Retries: e.Retries, NextAttempt: e.NextAttempt, Data: e.Data,
				})
				after = e.Marker
			}
			if !res.Truncated || len(res.Entries) == 0 {
				break
			}
		}
		if len(page.Entries) >= max {
			page.Next = page.Entries[len(page.Entries)-1].Marker
			// Truncated unless this was the last entry of the last shard;
			// finding out costs a read, so report it only when known.
			page.Truncated = true
			if more, err := q.moreAfter(ctx, name, n, page.Next); err == nil {
				page.Truncated = more
			}
			if !page.Truncated {
				page.Next = ""
			}
			return page, nil
		}
	}
	return page, nil
}

// moreAfter reports whether any entry follows marker m.
func (q *Queues) moreAfter(ctx context.Context, name string, n int, m string) (bool, error) {
	shard, after, err := ParseMarker(m)
	if err != nil {
		return false, err
	}
	for ; shard < n; shard, after = shard+1, "" {
		res, err := clsq.List(ctx, q.io, ShardOID(name, shard), after, 1)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if len(res.Entries) > 0 {
			return true, nil
		}
	}
	return false, nil
}
