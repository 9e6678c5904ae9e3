package amqp

import (
	"net"
	"sync"
	"time"
)

// corkConn holds back the connection's writes while a batch is being
// published, then sends them in one write: amqp091-go flushes every
// publish (method, header and body frames) with its own write, so a batch
// of n events cost n write system calls here and n wake-ups of the broker
// on the same CPUs (docs/bench/notify-issue25.md, round 11).
//
// While corked, Write only appends (the library's frames keep their
// order: it serialises its writes, and so does mu). uncork, or the safety
// timer when a caller never uncorks (a publish that blocks), sends what
// was held. A write error from a held flush is returned by the next Write
// or uncork, and the library's reader sees the closed connection: the
// held publishes then fail as unconfirmed, retryably, as any publish lost
// with its connection does.
type corkConn struct {
	net.Conn

	mu     sync.Mutex
	corked bool
	held   []byte
	err    error
	timer  *time.Timer
}

// corkMax bounds how long writes are held, and corkBytes how much.
const (
	corkMax   = 5 * time.Millisecond
	corkBytes = 1 << 20
)

func newCorkConn(c net.Conn) *corkConn { return &corkConn{Conn: c} }

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.corked {
		return c.Conn.Write(p)
	}
	c.held = append(c.held, p...)
	if len(c.held) >= corkBytes {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// cork holds writes until uncork (at most corkMax).
func (c *corkConn) cork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		return
	}
	c.corked = true
	if c.timer == nil {
		c.timer = time.AfterFunc(corkMax, func() { _ = c.uncork() })
	} else {
		c.timer.Reset(corkMax)
	}
}

// uncork sends what was held, in one write, and lets writes through.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.err
	}
	c.corked = false
	c.timer.Stop()
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if c.err != nil || len(c.held) == 0 {
		return c.err
	}
	_, err := c.Conn.Write(c.held)
	if cap(c.held) > corkBytes {
		c.held = nil // do not keep an outsized buffer
	} else {
		c.held = c.held[:0]
	}
	if err != nil {
		c.err = err
	}
	return err
}
