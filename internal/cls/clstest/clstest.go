// Package clstest is the behaviour every backend must show for Cairn's
// object classes (internal/cls), run against a real store: lock expiry and
// fencing, queue accounting and paging, epoch fencing and write-once for the
// log, and class caches that stay correct across reopen, seal and outside
// writes.
package clstest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Factory prepares one backend instance for a test. reg already has every
// class registered (cls.RegisterAll); now is the clock the backend must use
// for MethodContext.Now. open opens the instance: each call after the
// previous handle was closed reopens the same data (a restart, with empty
// class caches).
type Factory func(t *testing.T, reg *objstore.Registry, now func() time.Time) (open func() objstore.Store)

// Clock is a settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the current time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is one test's store, pool handle and clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	open  func() objstore.Store
	store objstore.Store
	io    objstore.IOContext
	clock *Clock
}

const pool = "clstest"

func newEnv(t *testing.T, f Factory) *env {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	c := &Clock{t: time.Unix(1_700_000_000, 0).UTC()}
	e := &env{t: t, ctx: context.Background(), clock: c}
	e.open = f(t, reg, c.Now)
	e.store = e.open()
	t.Cleanup(func() {
		if e.store != nil {
			e.store.Close()
		}
	})
	if err := e.store.CreatePool(e.ctx, pool); err != nil {
		t.Fatal(err)
	}
	e.handle()
	return e
}

func (e *env) handle() {
	io, err := e.store.IOContext(e.ctx, pool)
	if err != nil {
		e.t.Fatal(err)
	}
	e.io = io.WithNamespace("ns")
}

// reopen closes and reopens the store: class caches start empty.
func (e *env) reopen() {
	e.t.Helper()
	if err := e.store.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.store = nil
	e.store = e.open()
	e.handle()
}

func (e *env) stat(oid string) objstore.Stat {
	e.t.Helper()
	op := objstore.NewReadOp()
	s := op.Stat()
	if err := e.io.OperateRead(e.ctx, oid, op); err != nil {
		e.t.Fatal(err)
	}
	return s.Stat
}

func (e *env) omap(oid string) []objstore.KV {
	e.t.Helper()
	op := objstore.NewReadOp()
	s := op.GetOmapValues("", "", 0)
	if err := e.io.OperateRead(e.ctx, oid, op); err != nil {
		e.t.Fatal(err)
	}
	return s.Pairs
}

// Run runs every class test against f.
func Run(t *testing.T, f Factory) {
	t.Run("Lock", func(t *testing.T) { testLock(t, newEnv(t, f)) })
	t.Run("LockShared", func(t *testing.T) { testLockShared(t, newEnv(t, f)) })
	t.Run("LockFencing", func(t *testing.T) { testLockFencing(t, newEnv(t, f)) })
	t.Run("Version", func(t *testing.T) { testVersion(t, newEnv(t, f)) })
	t.Run("QueueCapacity", func(t *testing.T) { testQueueCapacity(t, newEnv(t, f)) })
	t.Run("QueueExpire", func(t *testing.T) { testQueueExpire(t, newEnv(t, f)) })
	t.Run("QueuePaging", func(t *testing.T) { testQueuePaging(t, newEnv(t, f)) })
	t.Run("QueueFenced", func(t *testing.T) { testQueueFenced(t, newEnv(t, f)) })
	t.Run("QueueCache", func(t *testing.T) { testQueueCache(t, newEnv(t, f)) })
	t.Run("QueueConcurrent", func(t *testing.T) { testQueueConcurrent(t, newEnv(t, f)) })
	t.Run("QueueReservationCache", func(t *testing.T) { testQueueReservationCache(t, newEnv(t, f)) })
	t.Run("QueueCommitBatch", func(t *testing.T) { testQueueCommitBatch(t, newEnv(t, f)) })
	t.Run("QueueReservationBlocks", func(t *testing.T) { testQueueReservationBlocks(t, newEnv(t, f)) })
	t.Run("LogEpochs", func(t *testing.T) { testLogEpochs(t, newEnv(t, f)) })
	t.Run("LogCache", func(t *testing.T) { testLogCache(t, newEnv(t, f)) })
	t.Run("LogConcurrentSeal", func(t *testing.T) { testLogConcurrentSeal(t, newEnv(t, f)) })
}
