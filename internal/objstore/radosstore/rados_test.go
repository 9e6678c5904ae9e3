//go:build rados

package radosstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/bucketindex/indextest"
	"github.com/cairn-s3/cairn/internal/cls/clstest"
	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/objstoretest"
	"github.com/cairn-s3/cairn/internal/objstore/radosstore"
	"github.com/cairn-s3/cairn/internal/server"
)

// cephConf is the cluster the tests use: $CAIRN_CEPH_CONF, or a cluster
// TestMain starts with scripts/ceph/cluster.sh (and stops afterwards).
var cephConf string

func TestMain(m *testing.M) {
	cephConf = os.Getenv("CAIRN_CEPH_CONF")
	stop := func() {}
	if cephConf == "" {
		if _, err := exec.LookPath("ceph-mon"); err != nil {
			// CI sets CAIRN_REQUIRE_CEPH=1: there a missing Ceph is a failure.
			if os.Getenv("CAIRN_REQUIRE_CEPH") == "1" {
				fmt.Fprintln(os.Stderr, "CAIRN_REQUIRE_CEPH=1 but ceph-mon is not installed (apt-get install ceph-mon ceph-osd ceph-common)")
				os.Exit(1)
			}
			fmt.Fprintln(os.Stderr, "skipping: no Ceph (ceph-mon not in PATH) and CAIRN_CEPH_CONF unset")
			os.Exit(0)
		}
		dir, err := os.MkdirTemp("", "cairn-ceph-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		script, _ := filepath.Abs("../../../scripts/ceph/cluster.sh")
		start := exec.Command(script, "start", dir)
		start.Stdout, start.Stderr = os.Stderr, os.Stderr
		if err := start.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "starting a Ceph cluster:", err)
			os.Exit(1)
		}
		cephConf = filepath.Join(dir, "ceph.conf")
		stop = func() {
			c := exec.Command(script, "stop", dir)
			c.Stdout, c.Stderr = os.Stderr, os.Stderr
			_ = c.Run()
			os.RemoveAll(dir)
		}
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

var prefixSeq atomic.Int64

func open(t testing.TB, opts radosstore.Options) *radosstore.Store {
	t.Helper()
	opts.ConfFile = cephConf
	opts.CreatePools = true
	opts.OpTimeout = 60 * time.Second
	s, err := radosstore.OpenStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	reg := objstore.NewRegistry()
	objstoretest.RegisterTestClasses(reg)
	st := open(t, radosstore.Options{Classes: reg, PoolPrefix: fmt.Sprintf("conf%d-%d.", os.Getpid(), prefixSeq.Add(1))})
	defer st.Close()
	objstoretest.RunCore(t, func(t *testing.T) objstore.Store { return st })
}

func TestClasses(t *testing.T) {
	clstest.Run(t, func(t *testing.T, reg *objstore.Registry, now func() time.Time) func() objstore.Store {
		prefix := fmt.Sprintf("cls%d-%d.", os.Getpid(), prefixSeq.Add(1))
		t.Cleanup(func() {
			s := open(t, radosstore.Options{PoolPrefix: prefix})
			defer s.Close()
			pools, _ := s.ListPools(context.Background())
			for _, p := range pools {
				s.DeletePool(context.Background(), p)
			}
		})
		return func() objstore.Store {
			return open(t, radosstore.Options{Classes: reg, Now: now, PoolPrefix: prefix})
		}
	})
}

// TestIndexVersions runs the cairn_index versions suite (link_version,
// unlink_version, listing, reshard copy/replay) on RADOS: the class is the
// same Go code as on the embedded store, run as a guarded transaction.
func TestIndexVersions(t *testing.T) {
	prefix := fmt.Sprintf("ix%d-%d.", os.Getpid(), prefixSeq.Add(1))
	t.Cleanup(func() {
		s := open(t, radosstore.Options{PoolPrefix: prefix})
		defer s.Close()
		pools, _ := s.ListPools(context.Background())
		for _, p := range pools {
			s.DeletePool(context.Background(), p)
		}
	})
	n := 0
	indextest.Run(t, func(t *testing.T) objstore.IOContext {
		reg := objstore.NewRegistry()
		bucketindex.Register(reg)
		st := open(t, radosstore.Options{Classes: reg, PoolPrefix: prefix})
		t.Cleanup(func() { st.Close() })
		n++
		pool := fmt.Sprintf("idx%d", n)
		ctx := context.Background()
		if err := st.CreatePool(ctx, pool); err != nil {
			t.Fatal(err)
		}
		io, err := st.IOContext(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		return io
	})
}

// TestOpCounts: every round trip is counted once, under its pool (without
// the prefix), namespace and kind; a class call costs a state read the
// first time and only its write once the object's state is known.
func TestOpCounts(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	bucketindex.Register(reg)
	st := open(t, radosstore.Options{Classes: reg, PoolPrefix: fmt.Sprintf("oc%d-%d.", os.Getpid(), prefixSeq.Add(1))})
	defer func() {
		st.DeletePool(ctx, "p")
		st.Close()
	}()
	if err := st.CreatePool(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	io, err := st.IOContext(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	ns := io.WithNamespace("n")
	if err := ns.Operate(ctx, "o", objstore.NewWriteOp().WriteFull([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	op := objstore.NewReadOp()
	op.Read(0, 1)
	if err := ns.OperateRead(ctx, "o", op); err != nil {
		t.Fatal(err)
	}
	ix := bucketindex.Index{IO: io, BucketID: "b", Layout: bucketindex.Layout{NumShards: 1}}
	if err := ix.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		e := bucketindex.Entry{Key: fmt.Sprint("k", i), Size: 1, ETag: "e", Tag: fmt.Sprint("t", i),
			Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: "t", Size: 1, StripeSize: 4 << 20}}}}
		if _, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, e, bucketindex.VersionCond{}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int64{}
	for _, o := range st.OpCounts() {
		got[o.Pool+"/"+o.Namespace+"/"+o.Kind] = o.N
	}
	// Init (a class call) reads the new shard's state and writes; the
	// links start from the state the previous call left, and guess their
	// new keys absent: no reads.
	want := map[string]int64{"p/n/write": 1, "p/n/read": 1, "p//txn_load": 1, "p//txn_write": 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("op counts %v, want %v", got, want)
	}
}

// TestReadFromLastCommit: a read of class calls right after this
// process's write starts from the state that write left (one guarded read,
// no state read), and a write by another client meanwhile only costs a
// retry: the read never answers from the stale state.
func TestReadFromLastCommit(t *testing.T) {
	ctx := context.Background()
	prefix := fmt.Sprintf("rc%d-%d.", os.Getpid(), prefixSeq.Add(1))
	a := open(t, radosstore.Options{Classes: server.Classes(), PoolPrefix: prefix})
	b := open(t, radosstore.Options{Classes: server.Classes(), PoolPrefix: prefix})
	defer func() {
		b.Close()
		a.DeletePool(ctx, "q")
		a.Close()
	}()
	if err := a.CreatePool(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	ioA, _ := a.IOContext(ctx, "q")
	ioB, _ := b.IOContext(ctx, "q")
	add := func(io objstore.IOContext, data string) {
		t.Helper()
		id, err := clsq.Reserve(ctx, io, "shard", 64, 1)
		if err == nil {
			_, err = clsq.Commit(ctx, io, "shard", id, []byte(data))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		t.Helper()
		res, err := clsq.List(ctx, ioA, "shard", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range res.Entries {
			out = append(out, string(e.Data))
		}
		return out
	}
	kinds := func() map[string]int64 {
		m := map[string]int64{}
		for _, o := range a.OpCounts() {
			m[o.Kind] += o.N
		}
		return m
	}
	if err := clsq.Init(ctx, ioA, "shard", 1<<20); err != nil {
		t.Fatal(err)
	}
	add(ioA, "e1")
	k0 := kinds()
	if got := list(); fmt.Sprint(got) != "[e1]" {
		t.Fatalf("list %v", got)
	}
	k1 := kinds()
	if k1["txn_load"] != k0["txn_load"] || k1["txn_read"]-k0["txn_read"] != 1 {
		t.Fatalf("a list after this process's commit: %d state reads, %d guarded reads; want 0, 1",
			k1["txn_load"]-k0["txn_load"], k1["txn_read"]-k0["txn_read"])
	}
	add(ioB, "e2") // another gateway: a's cached state is stale now
	if got := list(); fmt.Sprint(got) != "[e1 e2]" {
		t.Fatalf("list after another client's commit: %v, want [e1 e2]", got)
	}
	if k2 := kinds(); k2["txn_load"] == k1["txn_load"] {
		t.Fatal("the stale start was not refuted by a state read")
	}
}
