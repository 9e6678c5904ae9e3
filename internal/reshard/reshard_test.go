package reshard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/reshard"
)

func fill(e *env, bucket string, n int) model {
	md := model{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("obj/%05d", i)
		e.mustPut(bucket, k, i%7)
		md[k] = i % 7
	}
	return md
}

func TestReshardGrowAndShrink(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 1500)
	m := e.manager()
	ctx := context.Background()
	for _, n := range []int{11, 2, 1, 5} {
		res, err := m.Reshard(ctx, "bkt", n)
		if err != nil {
			t.Fatalf("reshard to %d: %v", n, err)
		}
		if res.To.NumShards != n || res.Copied != uint64(len(md)) || res.RolledBack {
			t.Fatalf("result %+v", res)
		}
		e.verify("bkt", md)
		// The bucket stays fully usable on the new generation.
		e.mustPut("bkt", fmt.Sprintf("after/%d", n), 3)
		md[fmt.Sprintf("after/%d", n)] = 3
		if err := e.d.DeleteObject(ctx, "bkt", "obj/00000"); err != nil {
			t.Fatal(err)
		}
		delete(md, "obj/00000")
		e.verify("bkt", md)
	}
	st, _ := e.d.BucketStats(ctx, "bkt")
	if st.Generation != 4 || st.NumShards != 5 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBadAdminInput(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 3)
	fill(e, "bkt", 50)
	ctx := context.Background()
	m := e.manager()
	for _, c := range []struct {
		bucket string
		n      int
		want   error
		msg    string
	}{
		{"nosuch", 5, driver.ErrNoSuchBucket, ""},
		{"Bad_Name", 5, driver.ErrNoSuchBucket, ""},
		{"bkt", 0, driver.ErrInvalidArgument, "at least 1"},
		{"bkt", -3, driver.ErrInvalidArgument, "at least 1"},
		{"bkt", driver.MaxShards + 1, driver.ErrInvalidArgument, "above the maximum"},
		{"bkt", 3, driver.ErrInvalidArgument, "already has"},
	} {
		_, err := m.Reshard(ctx, c.bucket, c.n)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("Reshard(%q, %d) = %v, want %v (%q)", c.bucket, c.n, err, c.want, c.msg)
		}
		if err := m.Enqueue(ctx, c.bucket, c.n); !errors.Is(err, c.want) {
			t.Errorf("Enqueue(%q, %d) = %v, want %v", c.bucket, c.n, err, c.want)
		}
	}
	if _, err := m.Status(ctx, "bkt"); !errors.Is(err, driver.ErrNoSuchReshard) {
		t.Errorf("status without reshard: %v", err)
	}
	if err := m.Cancel(ctx, "bkt"); !errors.Is(err, driver.ErrNoSuchReshard) {
		t.Errorf("cancel without reshard: %v", err)
	}
	if err := m.Cancel(ctx, "nosuch"); !errors.Is(err, driver.ErrNoSuchBucket) {
		t.Errorf("cancel of unknown bucket: %v", err)
	}
	// A reshard in progress (its gateway died while replaying).
	if _, err := e.manager("mid-replay").Reshard(ctx, "bkt", 7); !isCrash(err) {
		t.Fatalf("crash: %v", err)
	}
	if _, err := m.Reshard(ctx, "bkt", 5); !errors.Is(err, driver.ErrReshardInProgress) {
		t.Errorf("second reshard: %v", err)
	}
	if err := m.Enqueue(ctx, "bkt", 5); !errors.Is(err, driver.ErrReshardInProgress) {
		t.Errorf("enqueue while resharding: %v", err)
	}
	if err := e.d.DeleteBucket(ctx, "bkt"); !errors.Is(err, driver.ErrReshardInProgress) && !errors.Is(err, driver.ErrBucketNotEmpty) {
		t.Errorf("delete while resharding: %v", err)
	}
	st, err := m.Status(ctx, "bkt")
	if err != nil || st.State != "replay" || st.SourceShards != 3 || st.TargetShards != 7 || st.Copied != 50 || st.Total != 50 {
		t.Errorf("status %+v, %v", st, err)
	}
	// Its owner's lease is live: Process leaves it alone.
	if err := m.Process(ctx); err != nil {
		t.Errorf("process: %v", err)
	}
	if st2, _ := m.Status(ctx, "bkt"); st2.Owner != st.Owner {
		t.Errorf("owner changed from %s to %s under a live lease", st.Owner, st2.Owner)
	}
}

func TestValidateConfig(t *testing.T) {
	_, err := reshard.New(context.Background(), reshard.Config{MaxObjsPerShard: -1, MaxDynamicShards: driver.MaxShards + 1})
	for _, want := range []string{"Driver is required", "Store is required", "max-objs-per-shard", "max-dynamic-shards"} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("Validate: %v lacks %q", err, want)
		}
	}
}

func TestDynamicShards(t *testing.T) {
	for _, c := range []struct {
		objs          uint64
		cur, max, cap int
		want          int
	}{
		{100, 11, 100000, 1999, 0},
		{1100000, 11, 100000, 1999, 0},  // exactly at the limit
		{1100001, 11, 100000, 1999, 23}, // just over
		{500, 1, 100, 1999, 11},         // 2×5 = 10 → 11
		{10_000_000_000, 11, 100000, 1999, 1999},
		{10_000_000_000, 1999, 100000, 1999, 0}, // at the cap
		{10_000_000_000, 11, 100000, 1000, 997}, // cap not prime
	} {
		if got := reshard.DynamicShards(c.objs, c.cur, c.max, c.cap); got != c.want {
			t.Errorf("DynamicShards(%d, %d, %d, %d) = %d, want %d", c.objs, c.cur, c.max, c.cap, got, c.want)
		}
	}
}

func TestDynamicTrigger(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 1)
	md := fill(e, "bkt", 450)
	ctx := context.Background()
	done := make(chan reshard.Result, 10)
	m, err := reshard.New(ctx, reshard.Config{
		Driver: e.d, Store: e.st, Enabled: true, MaxObjsPerShard: 100, Interval: 20 * time.Millisecond,
		OnDone: func(r reshard.Result) { done <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	defer m.Close()
	select {
	case r := <-done:
		if r.From.NumShards != 1 || r.To.NumShards != 11 { // 2×450/100 = 9 → 11
			t.Fatalf("dynamic reshard %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no dynamic reshard")
	}
	e.verify("bkt", md)
}

// A bucket growing between checks is sized for the objects expected when
// its reshard ends, and the queue entry, `reshard status` and the record
// say why; with TriggerSizing it is RGW's rule.
func TestDynamicSizingForArrivals(t *testing.T) {
	for _, trigger := range []bool{false, true} {
		t.Run(fmt.Sprintf("trigger-sizing=%v", trigger), func(t *testing.T) {
			e := newEnv(t)
			e.bucket("bkt", 1)
			md := fill(e, "bkt", 80)
			ctx := context.Background()
			var now atomic.Int64
			now.Store(time.Now().UnixNano())
			m, err := reshard.New(ctx, reshard.Config{
				Driver: e.d, Store: e.st, MaxObjsPerShard: 100, TriggerSizing: trigger,
				CopyRateAdaptive: true, CopyRateMin: 50, CopyRateLimit: 1000,
				RampIn: -1, // rates this low would ramp for minutes
				Now:    func() time.Time { return time.Unix(0, now.Load()) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := m.Check(ctx, "bkt"); n != 0 || err != nil {
				t.Fatalf("check at 80 objects: %d %v", n, err)
			}
			for i := 80; i < 450; i++ {
				k := fmt.Sprintf("obj/%05d", i)
				e.mustPut("bkt", k, 1)
				md[k] = 1
			}
			now.Add(int64(10 * time.Second)) // 370 objects in 10 s
			n, err := m.Check(ctx, "bkt")
			if err != nil {
				t.Fatal(err)
			}
			// 37/s against the governor's floor 74/s: 450/(74-37) s, so
			// 900 objects expected, room for 900 + 3 × 450 = 2250:
			// 2250/100 + 1 = 23 shards (RGW: 9 → 11).
			want, wantPred := 23, uint64(900)
			if trigger {
				want, wantPred = 11, 450
			}
			st, err := m.Status(ctx, "bkt")
			if err != nil {
				t.Fatal(err)
			}
			if n != want || st.TargetShards != want || st.Sizing == nil || st.Sizing.Objects != 450 || st.Sizing.Predicted != wantPred {
				t.Fatalf("queued %d shards, status %+v sizing %+v; want %d shards for %d objects", n, st, st.Sizing, want, wantPred)
			}
			if !trigger && (st.Sizing.ArrivalsPerSec != 37 || st.Sizing.Basis != "pace") {
				t.Fatalf("sizing %+v", st.Sizing)
			}
			// The record carries it while the reshard runs.
			m2 := e.manager("mid-replay")
			if err := m2.Process(ctx); err == nil || !strings.Contains(err.Error(), "mid-replay") {
				t.Fatalf("process: %v", err)
			}
			st, err = m.Status(ctx, "bkt")
			if err != nil || st.State != "replay" || st.Sizing == nil || st.Sizing.Predicted != wantPred {
				t.Fatalf("status of the running reshard %+v (%v)", st, err)
			}
			e.expireLeases()
			if err := e.manager().Process(ctx); err != nil {
				t.Fatal(err)
			}
			if bs, _ := e.d.BucketStats(ctx, "bkt"); bs.NumShards != want {
				t.Fatalf("%d shards after the reshard, want %d", bs.NumShards, want)
			}
			// The entry with its sizing was dequeued (compared byte for byte).
			io, err := e.st.IOContext(ctx, driver.PoolLog)
			if err != nil {
				t.Fatal(err)
			}
			op := objstore.NewReadOp()
			vs := op.GetOmapValues("", "", 0)
			if err := io.WithNamespace("reshard").OperateRead(ctx, "reshard_queue", op); err != nil || len(vs.Pairs) != 0 {
				t.Fatalf("queue after the reshard: %v %v", vs.Pairs, err)
			}
			e.verify("bkt", md)
		})
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 300)
	ctx := context.Background()
	// Queued only: cancel drops the entry.
	m := e.manager()
	if err := m.Enqueue(ctx, "bkt", 7); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Status(ctx, "bkt"); err != nil || st.State != "queued" || st.TargetShards != 7 {
		t.Fatalf("status %+v %v", st, err)
	}
	if l, _ := m.List(ctx); len(l) != 1 || l[0].Bucket != "bkt" {
		t.Fatalf("list %+v", l)
	}
	if err := m.Cancel(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	e.verify("bkt", md)
	// Running (here: its gateway died mid-copy): cancel rolls it back.
	if _, err := e.manager("mid-copy").Reshard(ctx, "bkt", 7); !isCrash(err) {
		t.Fatalf("crash: %v", err)
	}
	e.mustPut("bkt", "during", 9) // logged in a source shard, kept by the rollback
	md["during"] = 9
	e.expireLeases()
	if err := e.manager().Cancel(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	e.verify("bkt", md)
	// Live owner: it notices the cancel and rolls back itself.
	slow := make(chan struct{})
	m2, _ := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, CopyBatch: 1, Workers: 1, LeaseDuration: time.Second,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			switch p {
			case "after-logging":
				close(slow)
			case "mid-copy":
				time.Sleep(600 * time.Millisecond) // a long copy: the owner sees the cancel
			}
			return false
		}}})
	errc := make(chan error, 1)
	go func() { _, err := m2.Reshard(ctx, "bkt", 13); errc <- err }()
	<-slow
	if err := m.Cancel(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, reshard.ErrCanceled) {
		t.Fatalf("canceled reshard returned %v", err)
	}
	e.verify("bkt", md)
}

// TestCrashAtEachFailpoint stops a reshard at every named step, as a killed
// gateway would, changes the bucket meanwhile, and has a new gateway resume
// or roll back: nothing lost, duplicated or stale, no orphaned objects.
func TestCrashAtEachFailpoint(t *testing.T) {
	t.Run("ops", func(t *testing.T) { testCrashAtEachFailpoint(t, false) })
	t.Run("load", func(t *testing.T) { testCrashAtEachFailpoint(t, true) })
}

func testCrashAtEachFailpoint(t *testing.T, load bool) {
	ctx := context.Background()
	points := reshard.Points
	if load {
		// And in a later chunk, after earlier chunks were loaded and
		// their ranges replayed.
		points = append(slices.Clip(points), "load-ingested#3", "load-replayed#2")
	}
	for _, point := range points {
		if !load && strings.HasPrefix(point, "load-") {
			continue // a loaded copy's chunks only
		}
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			e.copyLoad = load
			e.bucket("bkt", 3)
			md := fill(e, "bkt", 400)
			rng := rand.New(rand.NewSource(1))
			ops := func(n int) {
				for i := 0; i < n; i++ {
					k := fmt.Sprintf("obj/%05d", rng.Intn(600))
					if rng.Intn(3) == 0 {
						if err := e.d.DeleteObject(ctx, "bkt", k); err != nil {
							t.Errorf("delete %s: %v", k, err)
						}
						delete(md, k)
						continue
					}
					if err := e.put("bkt", k, 11); err != nil {
						t.Errorf("put %s: %v", k, err)
					}
					md[k] = 11
				}
			}
			var err error
			if point == "mid-rollback" {
				// Reach a rollback: crash mid-copy, then cancel from a
				// gateway that itself dies mid-rollback.
				_, err = e.manager("mid-copy").Reshard(ctx, "bkt", 7)
				e.expireLeases()
				err = e.manager(point).Cancel(ctx, "bkt")
			} else if strings.HasPrefix(point, "load-") {
				// Writes between the chunks, so that their replays have
				// records of every range to apply, skip and defer.
				e.onHit = func(p string) {
					if p == "load-ingested" {
						ops(40)
					}
				}
				_, err = e.manager(point).Reshard(ctx, "bkt", 7)
				e.onHit = nil
			} else {
				_, err = e.manager(point).Reshard(ctx, "bkt", 7)
			}
			if !isCrash(err) {
				t.Fatalf("want a crash at %s, got %v", point, err)
			}
			// Writers keep going against whatever state was left (they
			// wait out a closed index until the resume switches it).
			if point != "after-close" && point != "before-switch" && point != "after-join" {
				ops(60) // the index is writable: change it before the resume
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); ops(150) }()
			e.expireLeases()
			if err := e.manager().Process(ctx); err != nil {
				t.Fatalf("resume: %v", err)
			}
			wg.Wait()
			e.verify("bkt", md)
			st, _ := e.d.BucketStats(ctx, "bkt")
			wantShards := 7
			if point == "mid-rollback" || point == "after-init-target" || point == "after-logging" || point == "mid-copy" {
				// Copy-step crashes resume by redoing the copy; only the
				// canceled one rolls back.
				if point == "mid-rollback" {
					wantShards = 3
				}
			}
			if st.NumShards != wantShards {
				t.Fatalf("after resume: %d shards, want %d", st.NumShards, wantShards)
			}
		})
	}
}

// A queued reshard of a bucket deleted meanwhile is dropped by Process.
func TestQueuedBucketDeleted(t *testing.T) {
	e := newEnv(t)
	e.bucket("gone", 3)
	ctx := context.Background()
	m := e.manager()
	if err := m.Enqueue(ctx, "gone", 5); err != nil {
		t.Fatal(err)
	}
	if err := e.d.DeleteBucket(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := m.Process(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := m.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("queue after process: %v %v", l, err)
	}
	if oids, _, _ := e.d.IndexIO().ListObjects(ctx, "", 100); len(oids) != 0 {
		t.Fatalf("index objects left: %v", oids)
	}
}

// TestEarlyReplayUnderWrites reshards while writers change the bucket, with
// a slow paced copy so that sources finish at different times: their logs
// are replayed during the copy (EarlyReplayed > 0), and the result is exact.
// It runs with a fixed cap and with the adaptive governor.
func TestEarlyReplayUnderWrites(t *testing.T) {
	for _, adaptive := range []bool{false, true} {
		t.Run(fmt.Sprintf("adaptive=%v", adaptive), func(t *testing.T) {
			e := newEnv(t)
			e.bucket("bkt", 5)
			md := fill(e, "bkt", 1200)
			ctx := context.Background()
			m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, CopyBatch: 16, Workers: 2,
				CopyRateLimit: 3000, CopyRateAdaptive: adaptive, CopyRateMin: 1000, RampIn: -1, LeaseDuration: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := 0; w < 2; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(w)))
					for {
						select {
						case <-stop:
							return
						default:
						}
						// Each writer owns its keys, so the model's order
						// is the writer's order.
						k := fmt.Sprintf("obj/%05d", rng.Intn(700)*2+w)
						mu.Lock()
						if rng.Intn(4) == 0 {
							if err := e.d.DeleteObject(ctx, "bkt", k); err != nil {
								t.Errorf("delete %s: %v", k, err)
							}
							delete(md, k)
						} else {
							size := rng.Intn(30)
							if err := e.put("bkt", k, size); err != nil {
								t.Errorf("put %s: %v", k, err)
							}
							md[k] = size
						}
						mu.Unlock()
						time.Sleep(time.Millisecond)
					}
				}(w)
			}
			res, err := m.Reshard(ctx, "bkt", 13)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if res.EarlyReplayed == 0 {
				t.Fatalf("nothing replayed during the copy: %+v", res)
			}
			e.verify("bkt", md)
		})
	}
}

// TestDynamicOff: with dynamic resharding off, a bucket far over the limit
// is not queued by the background loop, but an admin-queued reshard still
// runs.
func TestDynamicOff(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 1)
	md := fill(e, "bkt", 450)
	ctx := context.Background()
	done := make(chan reshard.Result, 10)
	m, err := reshard.New(ctx, reshard.Config{
		Driver: e.d, Store: e.st, Enabled: false, MaxObjsPerShard: 100, Interval: 10 * time.Millisecond,
		OnDone: func(r reshard.Result) { done <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	defer m.Close()
	time.Sleep(300 * time.Millisecond) // ≈30 background passes
	if l, err := m.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("queue with dynamic resharding off: %+v %v", l, err)
	}
	if st, _ := e.d.BucketStats(ctx, "bkt"); st.NumShards != 1 {
		t.Fatalf("resharded with dynamic resharding off: %d shards", st.NumShards)
	}
	if err := m.Enqueue(ctx, "bkt", 5); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.To.NumShards != 5 {
			t.Fatalf("queued reshard %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("queued reshard did not run")
	}
	e.verify("bkt", md)
}

// Link intents (a notified write's pending event) sit on the source shards;
// the cleanup moves them to the target generation with the GC records, so
// the recovery pass still finds them after the sources are removed.
func TestReshardMovesLinkIntents(t *testing.T) {
	e := newEnv(t)
	e.bucket("ibkt", 3)
	md := fill(e, "ibkt", 50)
	ctx := context.Background()
	index := func() bucketindex.Index {
		inst, err := e.d.Instance(ctx, "ibkt")
		if err != nil {
			t.Fatal(err)
		}
		return bucketindex.Index{IO: e.d.IndexIO(), BucketID: inst.ID, Layout: inst.Layout}
	}
	intents := func(ix bucketindex.Index) map[string]string {
		out := map[string]string{}
		for s := 0; s < ix.Layout.NumShards; s++ {
			recs, err := ix.Intents(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				out[r.Tag] = string(r.Data)
			}
		}
		return out
	}
	src := index()
	want := map[string]string{}
	for s := 0; s < 3; s++ {
		tag := fmt.Sprintf("tag%d", s)
		want[tag] = fmt.Sprintf(`{"k":"obj/%05d"}`, s)
		if err := src.PutGCRecords(ctx, s, []objstore.KV{{Key: "\xffi/" + tag, Value: []byte(want[tag])}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := intents(src); len(got) != 3 {
		t.Fatalf("intents before: %v", got)
	}
	if _, err := e.manager().Reshard(ctx, "ibkt", 5); err != nil {
		t.Fatal(err)
	}
	e.verify("ibkt", md) // listings never show intents
	dst := index()
	if dst.Layout.Gen == src.Layout.Gen {
		t.Fatal("no new generation")
	}
	got := intents(dst)
	if len(got) != len(want) {
		t.Fatalf("intents after the reshard: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("intent %s: %q, want %q", k, got[k], v)
		}
	}
}

// The replay after the sources close takes the whole tail, however long:
// a round reads at most 16 pages per source, and a switch that replayed
// one round dropped the rest of a long tail (here 3 keys a page, 200 keys
// written after the last catch-up round, just before the close, ~67 per
// source shard).
func TestSwitchReplaysWholeTail(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := model{}
	for i := 0; i < 30; i++ {
		k := fmt.Sprintf("a%03d", i)
		e.mustPut("bkt", k, 1)
		md[k] = 1
	}
	late := 0
	m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, CopyBatch: 3, Workers: 1,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			if p == "before-close" && late == 0 {
				for ; late < 200; late++ {
					k := fmt.Sprintf("z%03d", late)
					e.mustPut("bkt", k, 2)
					md[k] = 2
				}
			}
			return false
		}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Reshard(ctx, "bkt", 5)
	if err != nil {
		t.Fatal(err)
	}
	if late != 200 || res.Tail != 200 {
		t.Fatalf("wrote %d keys before the close, replayed %d after it; want 200 and 200", late, res.Tail)
	}
	e.verify("bkt", md)
}

// TestSwitchTailBounded: what writers wait for at the switch is bounded by
// what arrives during the last catch-up round, not by what arrived while
// the closing record was written or by a long last round. Writers run
// concurrently with the replay, each round letting through R more writes
// (arrivals in step with the engine, so the bound is exact whatever the
// scheduling: at most the R let through after the last round plus the R
// of the round before, which may land after its read); a burst of B writes
// lands while the closing record is written. Before the catch-up rounds
// after that record, the burst was all replayed with writers blocked.
func TestSwitchTailBounded(t *testing.T) {
	const R, B = 8, 300
	ctx := context.Background()
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 300)
	var mu sync.Mutex // md
	tokens := make(chan struct{}, 1<<12)
	var inflight sync.WaitGroup
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tokens:
				}
				k := fmt.Sprintf("w%d/%05d", w, i)
				if err := e.put("bkt", k, 3); err != nil {
					t.Errorf("put %s: %v", k, err)
				}
				mu.Lock()
				md[k] = 3
				mu.Unlock()
				written.Add(1)
				inflight.Done()
			}
		}(w)
	}
	// release lets R writes through once the previous R are written.
	release := func() {
		inflight.Wait()
		inflight.Add(R)
		for i := 0; i < R; i++ {
			tokens <- struct{}{}
		}
	}
	burst := 0
	m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, CopyBatch: 16, TailRecords: 2 * R,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			switch p {
			case "mid-copy-replay", "mid-replay", "mid-catch-up":
				release()
			case "before-closing":
				for ; burst < B; burst++ {
					k := fmt.Sprintf("burst/%05d", burst)
					e.mustPut("bkt", k, 4)
					mu.Lock()
					md[k] = 4
					mu.Unlock()
				}
			}
			return false
		}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Reshard(ctx, "bkt", 7)
	inflight.Wait()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d concurrent writes, burst %d; %d rounds replayed %d; tail %d records, writers blocked %v",
		written.Load(), burst, res.ReplayRounds, res.Replayed, res.Tail, res.Block)
	if burst != B || written.Load() < 2*R {
		t.Fatalf("burst %d, %d concurrent writes: the test did not run as designed", burst, written.Load())
	}
	if res.Tail > 2*R {
		t.Fatalf("replayed %d records with writers blocked, want at most %d", res.Tail, 2*R)
	}
	e.verify("bkt", md)
}

// The block waits for one synced commit, the instance write: the close
// and the tail replay ride on its sync (a crash before it resumes in
// closing). Counted on the embedded store, with a tail to replay.
func TestSwitchSyncsOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 100)
	st := e.st.(*embedded.Store)
	commits := map[string]int64{}
	m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			switch p {
			case "before-close":
				for i := 0; i < 20; i++ {
					k := fmt.Sprintf("tail/%02d", i)
					e.mustPut("bkt", k, 5)
					md[k] = 5
				}
				fallthrough
			case "before-switch", "after-switch":
				commits[p] = st.LSMCounters().Commits
			}
			return false
		}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Reshard(ctx, "bkt", 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tail != 20 {
		t.Fatalf("tail %d, want the 20 writes made just before the close", res.Tail)
	}
	if n := commits["before-switch"] - commits["before-close"]; n != 0 {
		t.Errorf("%d synced commits while closing and replaying the tail, want 0", n)
	}
	if n := commits["after-switch"] - commits["before-switch"]; n != 1 {
		t.Errorf("%d synced commits for the switch, want 1 (the instance write)", n)
	}
	e.verify("bkt", md)
}

// TestCatchUpEndsWhenWritersOutrunRounds: writers that add more log
// records per source than a replay round reads, round after round, no
// longer keep a reshard catching up forever (TestModelConcurrentReshards
// hung this way on a loaded machine): the catch-up stops after its bound,
// the switch replays the rest, and every object is there.
func TestCatchUpEndsWhenWritersOutrunRounds(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.bucket("bkt", 3)
	fill(e, "bkt", 50)
	rounds, n := 0, 0
	m, err := reshard.New(ctx, reshard.Config{
		Driver: e.d, Store: e.st, CopyBatch: 8, MaxReplayRounds: 2, LeaseDuration: time.Minute,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			if p != "after-copy" && p != "mid-replay" {
				return false
			}
			if rounds++; rounds > 40 {
				t.Errorf("catch-up still going after %d rounds", rounds)
				return true // stop the engine
			}
			// 3 sources × 16 pages × 8 records a round: write more.
			for i := 0; i < 500; i++ {
				e.mustPut("bkt", fmt.Sprintf("burst/%03d/%04d", rounds, i), 1)
				n++
			}
			return false
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reshard(ctx, "bkt", 7); err != nil {
		t.Fatal(err)
	}
	keys, err := e.list("bkt", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 50+n {
		t.Fatalf("%d keys after the reshard, want %d", len(keys), 50+n)
	}
	if rounds < 5 {
		t.Fatalf("only %d rounds: the writers did not outrun the replay", rounds)
	}
}

// TestLoadChunksReplayByRange: a loaded copy commits in chunks and, after
// each, replays only the logged records of keys already loaded. Between
// chunks every key may change (puts, deletes, new keys), so records fall
// in every class: keys loaded (applied), keys a source has read but not
// yet loaded (deferred: applied now, their chunk's ingest would restore
// the value read before the change), keys not yet read (skipped: the copy
// reads the new value; applied too, the ingest and copy_stats would count
// them twice). The result must be exact.
func TestLoadChunksReplayByRange(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 600)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	res, hits := reshardInChunks(t, e, 64, func(hit int) {
		for i := 0; i < 600; i++ {
			k := fmt.Sprintf("obj/%05d", i)
			switch rng.Intn(6) {
			case 0:
				if err := e.d.DeleteObject(ctx, "bkt", k); err != nil {
					t.Errorf("delete %s: %v", k, err)
				}
				delete(md, k)
			case 1, 2:
				size := 20 + hit
				if err := e.put("bkt", k, size); err != nil {
					t.Errorf("put %s: %v", k, err)
				}
				md[k] = size
			}
		}
		k := fmt.Sprintf("new/%03d", hit)
		e.mustPut("bkt", k, 5)
		md[k] = 5
	})
	if !res.CopyLoaded || res.LoadChunks < 5 || hits != res.LoadChunks {
		t.Fatalf("loaded %v in %d chunks (%d hits), want several", res.CopyLoaded, res.LoadChunks, hits)
	}
	if res.EarlyReplayed == 0 || res.ReplaySkipped == 0 {
		t.Fatalf("between chunks: %d replayed, %d skipped; want both", res.EarlyReplayed, res.ReplaySkipped)
	}
	e.verify("bkt", md)
}

// TestLoadChunkRoundsDrainLog: after each chunk the range replay reads the
// sources' logs to their end, not one round's pages: more is logged per
// chunk here than a round reads (16 pages of 16 per source), and nothing
// may be left for the replay after the copy. With one round per chunk the
// backlog grew with every chunk (the stop-35 30M run: 10.2M records
// replayed after a copy at 163 sources).
func TestLoadChunkRoundsDrainLog(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 600)
	res, hits := reshardInChunks(t, e, 128, func(hit int) {
		for round := 0; round < 2; round++ {
			for i := 0; i < 600; i++ {
				k := fmt.Sprintf("obj/%05d", i)
				size := 10 + 2*hit + round
				if err := e.put("bkt", k, size); err != nil {
					t.Errorf("put %s: %v", k, err)
				}
				md[k] = size
			}
		}
	})
	if res.LoadChunks < 3 || hits != res.LoadChunks {
		t.Fatalf("loaded in %d chunks (%d hits), want several", res.LoadChunks, hits)
	}
	if res.Replayed != 0 {
		t.Fatalf("%d records left for the replay after the copy, want 0 (the chunks' rounds read every log to its end)", res.Replayed)
	}
	e.verify("bkt", md)
}

// What was logged for a chunk's keys while it was staged is released by
// its commit, to be applied at the pace it was logged, the first chunk's
// too: no round reads the logs before the first commit, so its records
// are read from the logs by the commit's rounds, not from the deferred.
func TestLoadChunkCommitReleases(t *testing.T) {
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 600)
	res, _ := reshardInChunks(t, e, 128, func(hit int) {
		if hit != 1 {
			return
		}
		// Keys of the first chunk (the 128 lowest), logged before its
		// commit's rounds read the logs.
		for i := 0; i < 100; i++ {
			k := fmt.Sprintf("obj/%05d", i)
			if err := e.put("bkt", k, 77); err != nil {
				t.Errorf("put %s: %v", k, err)
			}
			md[k] = 77
		}
	})
	if res.Released < 100 {
		t.Fatalf("the first commit released %d records, want the 100 logged for its keys", res.Released)
	}
	e.verify("bkt", md)
}

// reshardInChunks reshards bkt from 3 to 7 shards as a bulk load committed
// every chunk entries, calling afterChunk (with the chunk's number, from 1)
// after each chunk's ingest, before its range replay. It returns the
// result and how many chunks it saw.
func reshardInChunks(t *testing.T, e *env, chunk int, afterChunk func(hit int)) (reshard.Result, int) {
	t.Helper()
	ctx := context.Background()
	hits := 0
	m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, CopyBatch: 16, Workers: 2, CopyLoad: true, LoadChunk: chunk,
		LeaseDuration: 5 * time.Second,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			if p == "load-ingested" {
				hits++
				afterChunk(hits)
			}
			return false
		}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Reshard(ctx, "bkt", 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d chunks, %d records replayed during the copy, %d skipped, %d replayed after it", res.LoadChunks, res.EarlyReplayed, res.ReplaySkipped, res.Replayed)
	return res, hits
}
