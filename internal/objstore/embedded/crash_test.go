package embedded

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2"
)

const (
	crashDirEnv  = "CAIRN_EMBEDDED_CRASH_DIR"
	crashBaseEnv = "CAIRN_EMBEDDED_CRASH_BASE"
	crashWriters = 4
)

// TestCrashChild is the child half of TestCrashKill: it writes until it is
// killed, printing "ACK <writer> <seq>" after each acknowledged op.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashKill")
	}
	base, _ := strconv.ParseInt(os.Getenv(crashBaseEnv), 10, 64)
	// A 1 MiB memtable: the kill lands among flushes and compactions,
	// which write separated values (Options.ValueSeparation) to blob files.
	s, err := Open(Options{Dir: dir, BlobThreshold: 32 << 10, MemTableSize: 1 << 20})
	if err != nil {
		fmt.Println("OPEN-FAILED", err)
		os.Exit(2)
	}
	io := mustIO(t, s, "p")
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for w := 0; w < crashWriters; w++ {
		go func() {
			r := rand.New(rand.NewSource(base + int64(w)))
			for seq := base + 1; ; seq++ {
				// A deferred-sync write first: durable once the synced op
				// after it is acknowledged (WriteOp.DeferSync; writer 1 by
				// its context, objstore.WithDeferredSync).
				dop, dctx := deferredOp(seq), bg
				if w == 1 {
					dop.DeferSync, dctx = false, objstore.WithDeferredSync(bg, io)
				}
				if err := io.Operate(dctx, deferredOID(w, seq), dop); err != nil {
					fmt.Println("OP-FAILED", err)
					os.Exit(2)
				}
				op := crashOp(seq, r)
				// The last writer defers its own op too and then syncs
				// explicitly (objstore.Sync), as the driver does when no
				// synced op follows a deferred link.
				op.DeferSync = w == crashWriters-1
				if err := io.Operate(bg, fmt.Sprint("o", w), op); err != nil {
					fmt.Println("OP-FAILED", err)
					os.Exit(2)
				}
				if op.DeferSync {
					if err := objstore.Sync(bg, io); err != nil {
						fmt.Println("OP-FAILED", err)
						os.Exit(2)
					}
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

// TestCrashKill runs a writer process on a real directory, SIGKILLs it at
// a random moment, reopens, and checks that every acknowledged op survived
// and that no object is half-applied. Repeated on the same directory.
func TestCrashKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 0; round < 4; round++ {
		base := int64(round+1) * 1_000_000
		child := startCrashChild(t, "TestCrashChild", dir, base, crashWriters)
		// While the child runs, the directory is locked against us.
		if s, err := Open(Options{Dir: dir}); err == nil {
			s.Close()
			t.Fatal("opened a data directory another process holds")
		} else if !strings.Contains(err.Error(), "held by another process") {
			t.Fatalf("second open: %v", err)
		}
		acked, total := child.kill(time.Duration(r.Intn(300)) * time.Millisecond)

		s, err := Open(Options{Dir: dir, BlobThreshold: 32 << 10, MemTableSize: 1 << 20})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		io, err := s.IOContext(bg, "p")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for w := 0; w < crashWriters; w++ {
			seq, ok := readConsistent(t, io, fmt.Sprint("o", w))
			if acked[w] > 0 && (!ok || seq < acked[w] || seq > acked[w]+1) {
				t.Fatalf("round %d writer %d: recovered seq %d, last acknowledged %d", round, w, seq, acked[w])
			}
		}
		// Every deferred write before an acknowledged synced one survived.
		for w := 0; w < crashWriters; w++ {
			for seq := base + 1; seq <= acked[w]; seq++ {
				op := objstore.NewReadOp()
				d := op.Read(0, 0)
				if err := io.OperateRead(bg, deferredOID(w, seq), op); err != nil {
					t.Fatalf("round %d: deferred write %s before acknowledged seq %d: %v", round, deferredOID(w, seq), acked[w], err)
				}
				if want := deferredOp(seq).Steps[0].(*objstore.WriteFull).Data; !bytes.Equal(d.Data, want) {
					t.Fatalf("round %d: deferred write %s: %d bytes, want %d", round, deferredOID(w, seq), len(d.Data), len(want))
				}
			}
		}
		// Open collected blobs orphaned by the kill: one file per reference.
		refs := 0
		it, _ := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kBlobRf}, UpperBound: []byte{kBlobRf + 1}})
		for it.First(); it.Valid(); it.Next() {
			refs++
		}
		it.Close()
		if files := blobFiles(t, s); len(files) != refs {
			t.Fatalf("round %d: %d blob files for %d references", round, len(files), refs)
		}
		t.Logf("round %d: acknowledged %v (%d ops), recovered consistently; %d pebble blob files", round, acked, total, s.LSMStats().BlobFiles)
		s.Close()
	}
}

func deferredOID(w int, seq int64) string { return fmt.Sprintf("d%d.%d", w, seq) }

// deferredOp writes seq's tag with DeferSync, every fifth one large enough
// for a blob file (the child's threshold is 32 KiB).
func deferredOp(seq int64) *objstore.WriteOp {
	n := 3
	if seq%5 == 0 {
		n = 4000
	}
	op := objstore.NewWriteOp().WriteFull(bytes.Repeat([]byte(fmt.Sprintf("%010d", seq)), n))
	op.DeferSync = true
	return op
}

// crashChild is a writer process started from this test binary (run names
// its child test), printing "ACK <writer> <seq>" for each acknowledged op.
type crashChild struct {
	cmd   *exec.Cmd
	done  chan struct{}
	mu    sync.Mutex
	acked []int64
	total int
}

// startCrashChild starts run on dir with sequence base and returns once
// the child has acknowledged 20 ops.
func startCrashChild(t *testing.T, run, dir string, base int64, writers int) *crashChild {
	t.Helper()
	c := &crashChild{done: make(chan struct{}), acked: make([]int64, writers)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashBaseEnv+"="+strconv.FormatInt(base, 10))
	c.cmd.Stderr = os.Stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "ACK" {
				w, _ := strconv.Atoi(f[1])
				seq, _ := strconv.ParseInt(f[2], 10, 64)
				c.mu.Lock()
				c.acked[w] = max(c.acked[w], seq)
				if c.total++; c.total == 20 {
					close(started)
				}
				c.mu.Unlock()
			} else if len(f) > 0 && strings.HasSuffix(f[0], "FAILED") {
				t.Errorf("child: %s", sc.Text())
			}
		}
	}()
	select {
	case <-started:
	case <-c.done:
		c.cmd.Wait()
		t.Fatal("child exited before writing")
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		t.Fatal("child wrote nothing in 20s")
	}
	return c
}

// kill SIGKILLs the child after pause and returns every writer's last
// acknowledged seq and the number of acknowledgements.
func (c *crashChild) kill(pause time.Duration) ([]int64, int) {
	time.Sleep(pause)
	c.cmd.Process.Kill() // SIGKILL
	c.cmd.Wait()
	<-c.done
	return c.acked, c.total
}
