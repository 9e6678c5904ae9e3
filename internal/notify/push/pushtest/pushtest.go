// Package pushtest holds test helpers shared by the endpoints' tests.
package pushtest

import (
	"context"
	"testing"

	"github.com/cairn-s3/cairn/internal/notify/push"
)

// Batch runs b.PushBatch and returns each message's outcome, failing t
// unless done came exactly once per message and before PushBatch
// returned. onDone, if set, also sees every outcome as it arrives.
func Batch(t testing.TB, b push.Batcher, ctx context.Context, msgs []push.Message, onDone func(i int, err error)) []error {
	t.Helper()
	errs := make([]error, len(msgs))
	calls := make([]int, len(msgs))
	b.PushBatch(ctx, msgs, func(i int, err error) {
		calls[i]++
		errs[i] = err
		if onDone != nil {
			onDone(i, err)
		}
	})
	for i, n := range calls {
		if n != 1 {
			t.Fatalf("message %d: done called %d times", i, n)
		}
	}
	return errs
}
