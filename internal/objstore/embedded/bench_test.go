package embedded

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// diskWriteBytes is this process's write_bytes from /proc/self/io: bytes
// it caused to be sent to the block layer. -1 where unavailable.
func diskWriteBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// lsmWriteBytes is what pebble wrote: WAL, flushes and compactions.
func lsmWriteBytes(s *Store) int64 {
	c := s.LSMCounters()
	return int64(c.WALBytes + c.FlushedBytes + c.CompactedBytes + c.BlobFlushedBytes + c.BlobCompactedBytes + c.BlobRewrittenBytes)
}

// BenchmarkOmapSet: one synced SetOmap per op on a real disk, each
// goroutine on its own object: shows group commit.
func BenchmarkOmapSet(b *testing.B) {
	for _, par := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("goroutines=%d", par*2), func(b *testing.B) {
			s := openDisk(b, nil)
			io := mustIO(b, s, "p")
			var seq atomic.Int64
			val := bytes.Repeat([]byte("v"), 100)
			b.ReportAllocs()
			b.SetParallelism(par) // GOMAXPROCS=2 on the target machine
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				oid := fmt.Sprint("obj", seq.Add(1))
				for i := 0; pb.Next(); i++ {
					op := objstore.NewWriteOp().SetOmap(objstore.KV{Key: fmt.Sprintf("k%08d", i), Value: val})
					if err := io.Operate(bg, oid, op); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkOmapSetOneObject: many goroutines on ONE object; the lock is
// released before the WAL sync, so their syncs pipeline.
func BenchmarkOmapSetOneObject(b *testing.B) {
	s := openDisk(b, nil)
	io := mustIO(b, s, "p")
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := fmt.Sprintf("k%010d", seq.Add(1))
			if err := io.Operate(bg, "hot", objstore.NewWriteOp().SetOmap(objstore.KV{Key: k, Value: []byte("v")})); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteFull4MiB compares inline chunks with a blob file, and
// reports the disk bytes written per user byte (including a final flush of
// the memtable; compactions only as far as they ran).
func BenchmarkWriteFull4MiB(b *testing.B) {
	data := make([]byte, 4<<20)
	rand.New(rand.NewSource(1)).Read(data) // incompressible
	for _, c := range []struct {
		name string
		th   int
	}{{"inline", -1}, {"blob", DefaultBlobThreshold}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir(), BlobThreshold: c.th})
			if err != nil {
				b.Fatal(err)
			}
			io := mustIO(b, s, "p")
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			w0, l0 := diskWriteBytes(), lsmWriteBytes(s)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := io.Operate(bg, fmt.Sprint("o", i%64), objstore.NewWriteOp().WriteFull(data)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := s.db.Flush(); err != nil {
				b.Fatal(err)
			}
			user := float64(int64(b.N) * int64(len(data)))
			if w1 := diskWriteBytes(); w0 >= 0 {
				b.ReportMetric(float64(w1-w0)/user, "disk-B/user-B")
			}
			lsm := float64(lsmWriteBytes(s) - l0)
			if c.th > 0 {
				lsm += user // the blob files
			}
			b.ReportMetric(lsm/user, "lsm+blob-B/user-B")
			s.Close()
		})
	}
}
