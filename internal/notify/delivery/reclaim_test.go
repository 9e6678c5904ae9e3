package delivery

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/lock"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// The reclaim primitive: the same owner takes its dead incarnation's hold
// over at once, in one op, and that hold is fenced from then on; another
// owner still gets ErrBusy.
func TestReclaimOwnLease(t *testing.T) {
	e := newEnv(t)
	tp := e.createTopic("reclaim", "http://127.0.0.1:1/", 1, nil)
	e.publish(tp, "b", "k")
	oid := nq.ShardOID(nq.Name("", tp.Name), 0)
	io := e.q.IO()
	ctx := context.Background()
	old, _, err := acquire(ctx, io, oid, "gw", time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := acquire(ctx, io, oid, "gw", time.Hour, false); !errors.Is(err, objstore.ErrBusy) {
		t.Fatalf("same owner without reclaim: %v, want ErrBusy", err)
	}
	if _, _, err := acquire(ctx, io, oid, "other", time.Hour, true); !errors.Is(err, objstore.ErrBusy) {
		t.Fatalf("other owner with reclaim: %v, want ErrBusy", err)
	}
	l, prev, err := acquire(ctx, io, oid, "gw", time.Hour, true)
	if err != nil {
		t.Fatalf("reclaim: %v", err)
	}
	if prev != old.cookie || l.cookie == old.cookie {
		t.Fatalf("reclaimed cookie %q (new %q), want the old hold %q", prev, l.cookie, old.cookie)
	}
	info, err := lock.GetInfo(ctx, io, oid, LockName)
	if err != nil || len(info.Lockers) != 1 || info.Lockers[0].Cookie != l.cookie {
		t.Fatalf("lock after reclaim: %v %+v", err, info)
	}
	if _, err := old.list(ctx, "", 10); !errors.Is(err, errLeaseLost) {
		t.Fatalf("old incarnation's list: %v, want errLeaseLost", err)
	}
	if err := old.renew(ctx); !errors.Is(err, errLeaseLost) {
		t.Fatalf("old incarnation's renew: %v, want errLeaseLost", err)
	}
	if page, err := l.list(ctx, "", 10); err != nil || len(page.Entries) != 1 {
		t.Fatalf("new hold's list: %v %d", err, len(page.Entries))
	}
	// Freeing an own hold: only the owner's.
	if broke, err := breakOwn(ctx, io, oid, "other"); err != nil || broke {
		t.Fatalf("breakOwn by another owner: %v %v", broke, err)
	}
	if broke, err := breakOwn(ctx, io, oid, "gw"); err != nil || !broke {
		t.Fatalf("breakOwn by the owner: %v %v", broke, err)
	}
	if _, _, err := acquire(ctx, io, oid, "other", time.Hour, false); err != nil {
		t.Fatalf("acquire after the owner freed it: %v", err)
	}
}

// A gateway dies holding every lease (no release; the lease is ten
// minutes). Another gateway keeps waiting for them, but the same gateway
// restarted under its identity takes them over at once, frees what is
// beyond its fair share for the other, and delivers everything in order
// per key.
func TestRestartReclaimsOwnLeases(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	tp := e.createTopic("restart", rcv.url(), 3, nil)
	const lease = 10 * time.Minute
	long := func(c *Config) {
		c.LeaseDuration, c.RenewInterval, c.ScanInterval = lease, time.Minute, 50*time.Millisecond
	}
	own := func(c *Config) { c.ReclaimOwnLeases = true }
	a := e.manager("gw", e.endpoints(nil), long, own)
	eventually(t, 10*time.Second, "gw owns all shards", func() bool { return len(a.Owned()) == 3 })
	want := map[string][]uint64{}
	publish := func(n int) {
		for i := 0; i < n; i++ {
			for k := 0; k < 6; k++ {
				key := fmt.Sprintf("k%d", k)
				want["b/"+key] = append(want["b/"+key], e.publish(tp, "b", key))
			}
		}
	}
	publish(2)
	eventually(t, 10*time.Second, "first batch delivered", func() bool { return rcv.delivered() == 12 })
	a.abandon() // kill -9: the leases stay for ten minutes
	crashed := time.Now()
	publish(2)

	b := e.manager("gwB", e.endpoints(nil), long, own)
	scans := b.Stats().Scans
	eventually(t, 10*time.Second, "gwB scanned three times", func() bool { return b.Stats().Scans >= scans+3 })
	if got := b.Owned(); len(got) != 0 {
		t.Fatalf("another gateway took %v while the dead one's leases hold", got)
	}
	for i := 0; i < 3; i++ {
		info, err := lock.GetInfo(e.ctx, e.q.IO(), nq.ShardOID(nq.Name("", tp.Name), i), LockName)
		if err != nil || len(info.Lockers) != 1 || info.Lockers[0].Locker != "gw" {
			t.Fatalf("shard %d lock: %v %+v", i, err, info)
		}
	}

	a2 := e.manager("gw", e.endpoints(nil), long, own)
	eventually(t, 20*time.Second, "all delivered after the restart", func() bool { return rcv.delivered() == 24 })
	took := time.Since(crashed)
	if took >= lease {
		t.Fatalf("delivery resumed after %v: the lease (%v) lapsed, nothing was reclaimed", took, lease)
	}
	eventually(t, 10*time.Second, "the shards shared by gw and gwB", func() bool {
		o := ownedSnapshot(t, []*Manager{a2, b})
		return len(o[0])+len(o[1]) == 3 && len(o[0]) >= 1 && len(o[1]) >= 1
	})
	dups := rcv.checkOrder(t, want)
	if dups > 6 {
		t.Errorf("%d duplicates, want at most one per key (6): acks not yet removed at the crash", dups)
	}
	eventually(t, 10*time.Second, "queue empty", func() bool { return e.entries(tp) == 0 })
	t.Logf("delivery resumed %v after the crash (lease %v), %d duplicates", took.Round(time.Millisecond), lease, dups)
}

// A topic created after the manager's scan is delivered from its first
// commit: the commit asks for a scan. The scan interval is ten minutes, so
// nothing else can explain the delivery.
func TestNewTopicDeliveredAtOnce(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	m := e.manager("gw", e.endpoints(nil), func(c *Config) {
		c.LeaseDuration, c.RenewInterval, c.ScanInterval = 30*time.Minute, time.Minute, 10*time.Minute
	})
	eventually(t, 10*time.Second, "the first scan", func() bool { return m.Stats().Scans >= 1 })
	start := time.Now()
	tp := e.createTopic("fresh", rcv.url(), 11, nil)
	e.publish(tp, "b", "k")
	eventually(t, 20*time.Second, "the first event delivered", func() bool { return rcv.delivered() == 1 })
	t.Logf("first event of a new topic delivered %v after it was created (scan interval %v)",
		time.Since(start).Round(time.Millisecond), m.cfg.ScanInterval)
}
