package amqp

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// writeRecorder is a net.Conn that records each Write.
type writeRecorder struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
	err    error
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

func (w *writeRecorder) got() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.writes...)
}

func TestCorkConn(t *testing.T) {
	rec := &writeRecorder{}
	c := newCorkConn(rec)
	// Uncorked: every write goes through.
	_, _ = c.Write([]byte("a"))
	_, _ = c.Write([]byte("b"))
	if n := len(rec.got()); n != 2 {
		t.Fatalf("uncorked: %d writes, want 2", n)
	}
	// Corked: held, then one write in order; the caller's buffer may be
	// reused at once.
	c.cork()
	buf := []byte("1")
	for _, s := range []string{"1", "22", "333"} {
		buf = append(buf[:0], s...)
		if n, err := c.Write(buf); n != len(s) || err != nil {
			t.Fatalf("held write: %d %v", n, err)
		}
	}
	if n := len(rec.got()); n != 2 {
		t.Fatalf("corked writes reached the socket: %d", n)
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	w := rec.got()
	if len(w) != 3 || string(w[2]) != "122333" {
		t.Fatalf("after uncork: %q", w)
	}
	if err := c.uncork(); err != nil { // twice: nothing held
		t.Fatal(err)
	}
	// A caller that never uncorks: the timer sends what was held.
	c.cork()
	_, _ = c.Write([]byte("late"))
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.got()) < 4 {
		if time.Now().After(deadline) {
			t.Fatal("held writes never sent without uncork")
		}
		time.Sleep(time.Millisecond)
	}
	if w := rec.got(); string(w[3]) != "late" {
		t.Fatalf("timer flush: %q", w[3])
	}
	// Writes after the timer's flush go through again.
	_, _ = c.Write([]byte("x"))
	if n := len(rec.got()); n != 5 {
		t.Fatalf("after the timer: %d writes, want 5", n)
	}
	// Past corkBytes a held batch is sent at once.
	c.cork()
	big := bytes.Repeat([]byte("z"), corkBytes)
	_, _ = c.Write(big)
	if n := len(rec.got()); n != 6 {
		t.Fatalf("oversized hold: %d writes, want 6", n)
	}
	_ = c.uncork()
	// A failed flush is reported, and every later write fails.
	boom := errors.New("boom")
	c.cork()
	_, _ = c.Write([]byte("lost"))
	rec.mu.Lock()
	rec.err = boom
	rec.mu.Unlock()
	if err := c.uncork(); !errors.Is(err, boom) {
		t.Fatalf("uncork after a failed write: %v", err)
	}
	if _, err := c.Write([]byte("y")); !errors.Is(err, boom) {
		t.Fatalf("write after a failed flush: %v", err)
	}
}
