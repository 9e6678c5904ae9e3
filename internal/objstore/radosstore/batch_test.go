//go:build rados

package radosstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/cls/guardlog"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/radosstore"
	"github.com/cairn-s3/cairn/internal/server"
)

// TestGroupCommit: guarded appends that wait for one log object commit in
// one rados_write_op, each with its own result as if run alone: distinct
// positions, EAGAIN for a stale epoch and EROFS for a written position
// (the failing ops are left out of the batch, not failing it).
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	st := open(t, radosstore.Options{Classes: server.Classes(), PoolPrefix: fmt.Sprintf("gc%d-%d.", os.Getpid(), prefixSeq.Add(1))})
	defer func() {
		st.DeletePool(ctx, "p")
		st.Close()
	}()
	if err := st.CreatePool(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	io, err := st.IOContext(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	const oid, epoch = "log", 2
	if _, err := guardlog.Seal(ctx, io, oid, epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := guardlog.Append(ctx, io, oid, epoch, []byte("first")); err != nil {
		t.Fatal(err)
	}

	release, queued := radosstore.HoldObject(io, oid)
	const n = 10
	type result struct {
		pos uint64
		err error
	}
	res := make([]result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i {
			case 3: // stale epoch
				_, res[i].err = guardlog.Append(ctx, io, oid, epoch-1, []byte("stale"))
			case 6: // written position
				res[i].err = guardlog.Write(ctx, io, oid, epoch, 0, []byte("again"))
			default:
				res[i].pos, res[i].err = guardlog.Append(ctx, io, oid, epoch, []byte(fmt.Sprint("entry ", i)))
			}
		}()
	}
	for queued() < n { // all ten wait for the object
		runtime.Gosched()
	}
	c0 := st.Counters()
	release()
	wg.Wait()

	// One batch: one write, plus at most one more for a refuted absent-key
	// guess (the rewrite of position 0 guesses it absent: speculate.go). A
	// guess is refuted either by the write's guard (a second write) or,
	// when a later op in the batch fails on top of it, before any write
	// (speculate.go: a guess never decides a failure); which one depends
	// on the order the ten goroutines queue in.
	c1 := st.Counters()
	if got, misses := c1["writes"]-c0["writes"], c1["absent_misses"]-c0["absent_misses"]; got < 1 || got > 1+misses || misses > 1 {
		t.Errorf("%d ops took %d writes with %d refuted guesses, want 1 (one batch) + at most one per refuted guess (≤ 1)", n, got, misses)
	}
	seen := map[uint64]bool{}
	for i, r := range res {
		switch i {
		case 3:
			if !errors.Is(r.err, objstore.ErrAgain) {
				t.Errorf("stale append: %v, want ErrAgain", r.err)
			}
		case 6:
			if !errors.Is(r.err, objstore.ErrReadOnly) {
				t.Errorf("write of a written position: %v, want ErrReadOnly", r.err)
			}
		default:
			if r.err != nil {
				t.Fatalf("append %d: %v", i, r.err)
			}
			if r.pos < 1 || r.pos > n-2 || seen[r.pos] {
				t.Errorf("append %d got position %d (seen: %v)", i, r.pos, seen)
			}
			seen[r.pos] = true
			got, err := guardlog.Read(ctx, io, oid, r.pos)
			if err != nil || !bytes.Equal(got, []byte(fmt.Sprint("entry ", i))) {
				t.Errorf("read %d: %q, %v", r.pos, got, err)
			}
		}
	}
	if got, err := guardlog.Read(ctx, io, oid, 0); err != nil || string(got) != "first" {
		t.Errorf("position 0: %q, %v", got, err)
	}
	if ep, pos, _, err := guardlog.MaxPos(ctx, io, oid); err != nil || ep != epoch || pos != n-2 {
		t.Errorf("max_pos: epoch %d pos %d %v, want %d %d", ep, pos, err, epoch, n-2)
	}
}
