package embedded

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

const atomicCrashWriters = 3

// atomicData is what writer w's group seq stores as data; every seventh is
// large enough for a blob file (the child's threshold is 32 KiB).
func atomicData(w int, seq int64) []byte {
	n := 2
	if seq%7 == 0 {
		n = 4000
	}
	return bytes.Repeat([]byte(fmt.Sprintf("%d.%09d", w, seq)), n)
}

// TestCrashAtomicChild is the child half of TestCrashAtomicKill: each
// writer commits groups of a data object (pool d, DeferSync, as an S3
// stripe) and an index key naming it (pool x), as the driver's small PUT
// does, printing "ACK <writer> <seq>" after each.
func TestCrashAtomicChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashAtomicKill")
	}
	base, _ := strconv.ParseInt(os.Getenv(crashBaseEnv), 10, 64)
	s, err := Open(Options{Dir: dir, BlobThreshold: 32 << 10})
	if err != nil {
		fmt.Println("OPEN-FAILED", err)
		os.Exit(2)
	}
	data, index := mustIO(t, s, "d"), mustIO(t, s, "x")
	aw := objstore.Atomic(data, index)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for w := 0; w < atomicCrashWriters; w++ {
		go func() {
			for seq := base + 1; ; seq++ {
				oid := fmt.Sprintf("a%d.%d", w, seq)
				dop := objstore.NewWriteOp().WriteFull(atomicData(w, seq))
				dop.DeferSync, dop.Fresh = true, true
				xop := objstore.NewWriteOp().SetOmap(objstore.KV{Key: oid, Value: []byte("1")})
				err := aw.OperateAtomic(bg, []objstore.AtomicReq{
					{IO: data, OID: oid, Op: dop}, {IO: index, OID: fmt.Sprint("ix", w), Op: xop}})
				if err != nil {
					fmt.Println("OP-FAILED", err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintf(out, "ACK %d %d\n", w, seq)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	time.Sleep(30 * time.Second) // the parent kills us long before
	os.Exit(3)
}

// TestCrashAtomicKill kills the child at a random moment, then checks
// that every acknowledged group survived and that no group half-applied:
// each index key names a data object that holds its data, and each data
// object has its index key.
func TestCrashAtomicKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 0; round < 3; round++ {
		base := int64(round+1) * 1_000_000
		child := startCrashChild(t, "TestCrashAtomicChild", dir, base, atomicCrashWriters)
		acked, _ := child.kill(time.Duration(r.Intn(300)) * time.Millisecond)

		s, err := Open(Options{Dir: dir, BlobThreshold: 32 << 10})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		data, index := mustIO(t, s, "d"), mustIO(t, s, "x")
		linked := map[string]bool{}
		for w := 0; w < atomicCrashWriters; w++ {
			op := objstore.NewReadOp()
			om := op.GetOmapValues("", "", 0)
			if err := index.OperateRead(bg, fmt.Sprint("ix", w), op); objstore.Code(err) == objstore.ErrNotFound && acked[w] == 0 {
				continue // the child was killed before this writer's first group (a loaded machine)
			} else if err != nil {
				t.Fatalf("round %d: index of writer %d (last ack %d): %v", round, w, acked[w], err)
			}
			for _, kv := range om.Pairs {
				linked[kv.Key] = true
			}
			for seq := base + 1; seq <= acked[w]; seq++ {
				if oid := fmt.Sprintf("a%d.%d", w, seq); !linked[oid] {
					t.Fatalf("round %d: acknowledged group %s lost (last ack %d)", round, oid, acked[w])
				}
			}
		}
		oids, _, err := data.ListObjects(bg, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, oid := range oids {
			if !linked[oid] {
				t.Fatalf("round %d: data object %s survived without its index key", round, oid)
			}
		}
		for oid := range linked {
			var w int
			var seq int64
			fmt.Sscanf(oid, "a%d.%d", &w, &seq)
			op := objstore.NewReadOp()
			rd := op.Read(0, 0)
			if err := data.OperateRead(bg, oid, op); err != nil {
				t.Fatalf("round %d: index key %s names missing data: %v", round, oid, err)
			}
			if !bytes.Equal(rd.Data, atomicData(w, seq)) {
				t.Fatalf("round %d: data of %s: %d bytes, want %d", round, oid, len(rd.Data), len(atomicData(w, seq)))
			}
		}
		if files := blobFiles(t, s); len(files) > len(linked) {
			t.Fatalf("round %d: %d blob files for %d groups", round, len(files), len(linked))
		}
		t.Logf("round %d: acknowledged %v, %d groups recovered whole", round, acked, len(linked))
		s.Close()
	}
}
