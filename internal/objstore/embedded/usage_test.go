package embedded

import (
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// LSMCounters counts what the scale bench attributes its noise to: a
// synced write's WAL sync, a flush begun and finished and its bytes.
func TestLSMCounters(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := s.LSMCounters()
	ioc := mustIO(t, s, "p")
	mustOp(t, ioc, "a", objstore.NewWriteOp().WriteFull([]byte("hello")))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	c := s.LSMCounters()
	if c.WALSyncs <= before.WALSyncs || c.WALSyncNanos <= before.WALSyncNanos || c.WALBytes <= before.WALBytes {
		t.Fatalf("WAL: before %+v, after %+v", before, c)
	}
	if c.FlushesBegun != before.FlushesBegun+1 || c.FlushesDone != before.FlushesDone+1 || c.FlushedBytes <= before.FlushedBytes {
		t.Fatalf("flush: before %+v, after %+v", before, c)
	}
	if c.Commits <= before.Commits || c.CommitNanos <= before.CommitNanos || c.SyncWaitNanos > c.CommitNanos {
		t.Fatalf("commits: before %+v, after %+v", before, c)
	}
	if c.L0Files == 0 {
		t.Fatalf("no L0 table after a flush: %+v", c)
	}
}
