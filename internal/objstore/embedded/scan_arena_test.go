package embedded

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// A scan's values share chunks (not one allocation each), and each is
// capped: appending to one never changes the next.
func TestScanValuesShareChunks(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, testRegistry())
	if err := s.CreatePool(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	io, err := s.IOContext(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var kvs []objstore.KV
	for i := range n {
		kvs = append(kvs, objstore.KV{Key: fmt.Sprintf("e%04d", i), Value: bytes.Repeat([]byte{byte(i)}, 800)})
	}
	if err := io.Operate(ctx, "o", objstore.NewWriteOp().SetOmap(kvs...)); err != nil {
		t.Fatal(err)
	}
	read := func() []objstore.KV {
		op := objstore.NewReadOp()
		res := op.GetOmapValues("", "", n)
		if err := io.OperateRead(ctx, "o", op); err != nil {
			t.Fatal(err)
		}
		return res.Pairs
	}
	got := read()
	if len(got) != n {
		t.Fatalf("%d pairs", len(got))
	}
	_ = append(got[0].Value, 0xff)
	for i, kv := range got {
		if kv.Key != kvs[i].Key || !bytes.Equal(kv.Value, kvs[i].Value) {
			t.Fatalf("pair %d: %q = %x…, want %q", i, kv.Key, kv.Value[:4], kvs[i].Key)
		}
	}
	// One allocation per key string, a few chunks, the op's own: well
	// under two per pair (a copy per value made it over two).
	if a := testing.AllocsPerRun(20, func() { read() }); a > 1.5*n {
		t.Fatalf("%.0f allocations to read %d pairs", a, n)
	}
}
