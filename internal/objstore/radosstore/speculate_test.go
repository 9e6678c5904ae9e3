//go:build rados

package radosstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/radosstore"
	"github.com/cairn-s3/cairn/internal/server"
)

// TestAbsentGuess: an index link of a new key on a shard this process
// knows costs one write and no state read (the key's absence is asserted
// by the write); a guess refuted by another client's write (a second
// connection linked the key) reruns reading, so conditions that need the
// key present still hold and nothing is overwritten blindly.
func TestAbsentGuess(t *testing.T) {
	ctx := context.Background()
	prefix := fmt.Sprintf("ag%d-%d.", os.Getpid(), prefixSeq.Add(1))
	a := open(t, radosstore.Options{Classes: server.Classes(), PoolPrefix: prefix})
	b := open(t, radosstore.Options{Classes: server.Classes(), PoolPrefix: prefix})
	defer func() {
		b.Close()
		a.DeletePool(ctx, "idx")
		a.Close()
	}()
	if err := a.CreatePool(ctx, "idx"); err != nil {
		t.Fatal(err)
	}
	ioA, err := a.IOContext(ctx, "idx")
	if err != nil {
		t.Fatal(err)
	}
	ioB, err := b.IOContext(ctx, "idx")
	if err != nil {
		t.Fatal(err)
	}
	layout := bucketindex.Layout{NumShards: 1}
	ixA := bucketindex.Index{IO: ioA, BucketID: "b", Layout: layout}
	ixB := bucketindex.Index{IO: ioB, BucketID: "b", Layout: layout}
	if err := ixA.Init(ctx); err != nil {
		t.Fatal(err)
	}
	ent := func(key, tag string) bucketindex.Entry {
		return bucketindex.Entry{Key: key, Size: 1, ETag: "e-" + tag, Tag: tag,
			Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: tag, Size: 1, StripeSize: 4 << 20}}}}
	}
	link := func(ix bucketindex.Index, key, tag string, c bucketindex.VersionCond) error {
		_, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, ent(key, tag), c)
		return err
	}
	if err := link(ixA, "warm", "t0", bucketindex.VersionCond{}); err != nil {
		t.Fatal(err)
	}
	c0 := a.Counters()
	for i := range 5 {
		if err := link(ixA, fmt.Sprint("new", i), fmt.Sprint("t", i+1), bucketindex.VersionCond{}); err != nil {
			t.Fatal(err)
		}
	}
	c1 := a.Counters()
	if reads, writes, guesses := c1["state_reads"]-c0["state_reads"], c1["writes"]-c0["writes"], c1["absent_guesses"]-c0["absent_guesses"]; reads != 0 || writes != 5 || guesses != 5 {
		t.Errorf("5 links of new keys: %d state reads, %d writes, %d confirmed guesses; want 0, 5, 5", reads, writes, guesses)
	}

	// b links "k"; a, whose cache still has the shard at its own last
	// version, guesses "k" absent, and If-Match: * fails on the guess,
	// which a guess may not decide: a reruns reading and succeeds.
	if err := link(ixB, "k", "tb", bucketindex.VersionCond{}); err != nil {
		t.Fatal(err)
	}
	m0 := a.Counters()["absent_misses"]
	if err := link(ixA, "k", "ta", bucketindex.VersionCond{IfExists: true}); err != nil {
		t.Fatalf("If-Match: * over b's key, guessed absent by a: %v", err)
	}
	if got := a.Counters()["absent_misses"] - m0; got != 1 {
		t.Errorf("refuted guesses: %d, want 1", got)
	}
	e, err := ixA.Get(ctx, "k")
	if err != nil || e.Tag != "ta" {
		t.Fatalf("k after a's conditional link: %+v %v", e, err)
	}
	// b links "k2", then a links another key, so a's cache holds the
	// shard's current version: only the write's omap_cmp guard can refute
	// a's guess that "k2" is absent, and If-None-Match: * must see it.
	if err := link(ixB, "k2", "tb2", bucketindex.VersionCond{}); err != nil {
		t.Fatal(err)
	}
	if err := link(ixA, "sync", "ts", bucketindex.VersionCond{}); err != nil {
		t.Fatal(err)
	}
	w0 := a.Counters()
	if err := link(ixA, "k2", "ta2", bucketindex.VersionCond{IfAbsent: true}); objstore.Code(err) != objstore.ErrCanceled {
		t.Fatalf("If-None-Match: * over b's key, guessed absent by a: %v, want ErrCanceled", err)
	}
	if w1 := a.Counters(); w1["writes"]-w0["writes"] != 1 || w1["absent_misses"]-w0["absent_misses"] != 1 {
		t.Errorf("refuted by the guard: %d writes, %d misses; want 1, 1", w1["writes"]-w0["writes"], w1["absent_misses"]-w0["absent_misses"])
	}
	if e, err := ixA.Get(ctx, "k2"); err != nil || e.Tag != "tb2" {
		t.Fatalf("k2 after the refused link: %+v %v", e, err)
	}
}
