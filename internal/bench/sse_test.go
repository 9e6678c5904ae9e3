package bench

import (
	"context"
	"testing"
)

// TestSSEInProcess runs the in-process half of the SSE workload small: a
// 1 MiB range of an encrypted object reads at most the range plus two
// packages, and bucket keys cut KMS calls.
func TestSSEInProcess(t *testing.T) {
	res, err := RunSSE(context.Background(), SSEConfig{RangeObject: 24 << 20, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Range; r.StoreBytes == 0 || r.StoreBytes > r.Bound {
		t.Fatalf("range read %d bytes, bound %d", r.StoreBytes, r.Bound)
	}
	k := res.KMS
	if k.PutNoBucketKey != 1 || k.GetNoBucketKey != 1 || k.PutBucketKey > 0.05 || k.GetBucketKey > 0.05 {
		t.Fatalf("KMS calls %+v", k)
	}
}
