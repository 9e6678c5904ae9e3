//go:build rados

package radosstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/radosstore"
)

// Benchmarks of the hot paths on a real cluster: Go classes as optimistic
// transactions vs plain ops vs cls_lua (when the OSDs load it).
//
//	go test -tags rados -run '^$' -bench . -benchtime 2s ./internal/objstore/radosstore/

var benchSeq atomic.Int64

func classesAll() *objstore.Registry {
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	return reg
}

var benchPrefix = map[*radosstore.Store]string{}

func benchStore(b *testing.B) (*radosstore.Store, objstore.IOContext) {
	b.Helper()
	prefix := fmt.Sprintf("bench%d.", benchSeq.Add(1))
	st := open(b, radosstore.Options{Classes: classesAll(), PoolPrefix: prefix})
	benchPrefix[st] = prefix
	ctx := context.Background()
	if err := st.CreatePool(ctx, "p"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.DeletePool(context.Background(), "p"); st.Close() })
	io, err := st.IOContext(ctx, "p")
	if err != nil {
		b.Fatal(err)
	}
	// warm up: the first op on a new pool waits for its PGs to peer
	if err := io.Operate(ctx, "warmup", objstore.NewWriteOp().Create(false)); err != nil {
		b.Fatal(err)
	}
	return st, io
}

func report(b *testing.B, st *radosstore.Store, before radosstore.Stats) {
	s := st.Stats()
	if n := s.Txns - before.Txns; n > 0 {
		b.ReportMetric(float64(s.Conflicts-before.Conflicts)/float64(n), "conflicts/txn")
		b.ReportMetric(float64(s.Reads-before.Reads)/float64(n), "reads/txn")
	}
}

// BenchmarkOmapSet is the floor: one plain rados_write_op (omap_set of a
// 1 KiB value), one round trip.
func BenchmarkOmapSet(b *testing.B) {
	_, io := benchStore(b)
	ctx := context.Background()
	v := make([]byte, 1024)
	b.Run("serial", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := io.Operate(ctx, "o", objstore.NewWriteOp().SetOmap(objstore.KV{Key: strconv.Itoa(i), Value: v})); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("16-on-one-object", func(b *testing.B) {
		var n atomic.Int64
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := io.Operate(ctx, "o16", objstore.NewWriteOp().SetOmap(objstore.KV{Key: strconv.FormatInt(n.Add(1), 10), Value: v})); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkQueue: the per-PUT cost of a persistent notification, reserve
// then commit of a 1 KiB event (two Go-class execs), against the plain
// equivalent (the event and header in one omap_set op, what a server-side
// class does in one round trip).
func BenchmarkQueue(b *testing.B) {
	st, io := benchStore(b)
	ctx := context.Background()
	ev := make([]byte, 1024)
	rc := func(b *testing.B, oid string) {
		id, err := queue.Reserve(ctx, io, oid, 4096, 1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := queue.Commit(ctx, io, oid, id, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("reserve+commit/serial", func(b *testing.B) {
		if err := queue.Init(ctx, io, "q1", 1<<40); err != nil && !errors.Is(err, objstore.ErrExists) {
			b.Fatal(err)
		}
		before := st.Stats()
		for b.Loop() {
			rc(b, "q1")
		}
		report(b, st, before)
	})
	b.Run("reserve+commit/16-on-one-queue", func(b *testing.B) {
		if err := queue.Init(ctx, io, "q16", 1<<40); err != nil && !errors.Is(err, objstore.ErrExists) {
			b.Fatal(err)
		}
		before := st.Stats()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rc(b, "q16")
			}
		})
		report(b, st, before)
	})
	b.Run("reserve+commit/2-stores-on-one-queue", func(b *testing.B) {
		// two gateways (two connections) on one queue object: conflicts
		if err := queue.Init(ctx, io, "q2s", 1<<40); err != nil && !errors.Is(err, objstore.ErrExists) {
			b.Fatal(err)
		}
		st3 := open(b, radosstore.Options{Classes: classesAll(), PoolPrefix: benchPrefix[st]})
		defer st3.Close()
		io3, err := st3.IOContext(ctx, "p")
		if err != nil {
			b.Fatal(err)
		}
		before, before3 := st.Stats(), st3.Stats()
		var n atomic.Int64
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			use := io
			if n.Add(1)%2 == 0 {
				use = io3
			}
			for pb.Next() {
				id, err := queue.Reserve(ctx, use, "q2s", 4096, 1)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := queue.Commit(ctx, use, "q2s", id, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
		s1, s3 := st.Stats(), st3.Stats()
		txns := s1.Txns - before.Txns + s3.Txns - before3.Txns
		if txns > 0 {
			b.ReportMetric(float64(s1.Conflicts-before.Conflicts+s3.Conflicts-before3.Conflicts)/float64(txns), "conflicts/txn")
		}
	})
	b.Run("plain-equivalent/serial", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			op := objstore.NewWriteOp().SetOmap(objstore.KV{Key: fmt.Sprintf("%020d", i), Value: ev}).SetOmapHeader([]byte(strconv.Itoa(i)))
			if err := io.Operate(ctx, "qp", op); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkIndexLink: cairn_index link (a new key in a bucket-index shard)
// as a Go class vs the plain omap_set of the same entry.
func BenchmarkIndexLink(b *testing.B) {
	st, io := benchStore(b)
	ctx := context.Background()
	x := bucketindex.Index{IO: io, BucketID: "b", Layout: bucketindex.Layout{Gen: 1, NumShards: 1}}
	if err := x.Init(ctx); err != nil {
		b.Fatal(err)
	}
	entry := func(i int64) bucketindex.Entry {
		return bucketindex.Entry{Key: "obj/" + strconv.FormatInt(i, 10), Size: 4096, ETag: "0123456789abcdef0123456789abcdef",
			ModTime: time.Unix(1_700_000_000, 0), Tag: "t" + strconv.FormatInt(i, 10)}
	}
	b.Run("link/serial", func(b *testing.B) {
		before := st.Stats()
		for i := int64(0); b.Loop(); i++ {
			if _, err := x.Link(ctx, entry(i), bucketindex.LinkCond{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, st, before)
	})
	b.Run("link/16-on-one-shard", func(b *testing.B) {
		var n atomic.Int64
		before := st.Stats()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := x.Link(ctx, entry(1_000_000+n.Add(1)), bucketindex.LinkCond{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		report(b, st, before)
	})
	b.Run("plain-omap-set/serial", func(b *testing.B) {
		for i := int64(0); b.Loop(); i++ {
			e := entry(i)
			v, _ := json.Marshal(e)
			if err := io.Operate(ctx, "plain-shard", objstore.NewWriteOp().SetOmap(objstore.KV{Key: e.Key, Value: v}).SetOmapHeader(v[:64])); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Lua versions of the two hot paths, run server-side by cls_lua (the
// module is "objclass" in Pacific's cls_lua; EPERM when the OSDs do not
// load the class): one round
// trip each, no Go class. They do the same omap work as the Go classes
// (read the header, set the entry, write the header) without their full
// logic, so they bound what a port to Lua could reach.
const luaCommit = `
function commit(input, output)
  local n = 0
  local ok, h = pcall(objclass.map_read_header)
  if ok and h then n = tonumber(h:str()) or 0 end
  n = n + 1
  objclass.map_set_val(string.format("%020d", n), input)
  local nh = bufferlist.new()
  nh:append(tostring(n))
  objclass.map_write_header(nh)
end
objclass.register(commit)
`

const luaLink = `
function link(input, output)
  local key = input:str():sub(1, 24)
  local size = 0
  local ok, old = pcall(objclass.map_get_val, key)
  local ok2, h = pcall(objclass.map_read_header)
  if ok2 and h then size = tonumber(h:str()) or 0 end
  size = size + #input:str()
  objclass.map_set_val(key, input)
  local nh = bufferlist.new()
  nh:append(tostring(size))
  objclass.map_write_header(nh)
end
objclass.register(link)
`

func luaIn(script, handler string, input []byte) []byte {
	b, _ := json.Marshal(map[string]string{"script": script, "handler": handler, "input": string(input)})
	return b
}

func BenchmarkLua(b *testing.B) {
	_, io := benchStore(b)
	ctx := context.Background()
	if _, _, err := radosstore.ExecNative(ctx, io, "probe", "lua", "eval_json", luaIn(luaCommit, "commit", []byte("x")), true); err != nil {
		if errors.Is(err, objstore.ErrNotSupported) || errors.Is(err, objstore.Errno(1)) {
			b.Skipf("cls_lua not available on this cluster (add lua to osd_class_load_list): %v", err)
		}
		b.Fatal(err)
	}
	ev := make([]byte, 1024)
	b.Run("commit/serial", func(b *testing.B) {
		in := luaIn(luaCommit, "commit", ev)
		for b.Loop() {
			if _, _, err := radosstore.ExecNative(ctx, io, "lq", "lua", "eval_json", in, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("commit/16-on-one-object", func(b *testing.B) {
		in := luaIn(luaCommit, "commit", ev)
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := radosstore.ExecNative(ctx, io, "lq16", "lua", "eval_json", in, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("link/serial", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			v := fmt.Sprintf("obj/%020d{\"s\":4096,\"e\":\"0123456789abcdef0123456789abcdef\",\"g\":\"t%d\"}", i, i)
			if _, _, err := radosstore.ExecNative(ctx, io, "ls", "lua", "eval_json", luaIn(luaLink, "link", []byte(v)), true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
