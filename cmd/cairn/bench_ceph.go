package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/radosstore"
	"github.com/cairn-s3/cairn/internal/server"
)

// cephFlags are the Ceph options of a benchmark, named as cairn serve's.
type cephFlags struct {
	conf, user, poolPrefix string
	connections            int
}

func (c *cephFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.conf, "ceph-conf", "", "ceph.conf of the cluster (backend rados)")
	fs.StringVar(&c.user, "ceph-user", "admin", "Ceph client name without \"client.\" (backend rados)")
	fs.IntVar(&c.connections, "ceph-connections", 1, "librados connections (independent clients, as separate gateways are); client i uses connection i mod N (backend rados)")
	fs.StringVar(&c.poolPrefix, "ceph-pool-prefix", "", "prefix of the benchmark's pool names (default cairn-bench-<pid>-); its pools are deleted afterwards (backend rados)")
}

// counterer is a store that reports internal counters (the RADOS
// backend's optimistic-path statistics).
type counterer interface{ Counters() map[string]int64 }

// open connects the stores (one librados connection each) for the whole
// benchmark and returns a pool opener whose cleanup deletes the pool.
func (c *cephFlags) open(ctx context.Context) (func(context.Context, string) ([]objstore.IOContext, func(), error), func() map[string]int64, func(), error) {
	if c.conf == "" {
		return nil, nil, nil, fmt.Errorf("--backend rados needs --ceph-conf")
	}
	if c.connections < 1 || c.connections > 256 {
		return nil, nil, nil, fmt.Errorf("--ceph-connections %d: want 1..256", c.connections)
	}
	prefix := c.poolPrefix
	if prefix == "" {
		prefix = fmt.Sprintf("cairn-bench-%d-", os.Getpid())
	}
	var stores []objstore.Store
	closeAll := func() {
		for _, st := range stores {
			st.Close()
		}
	}
	for i := 0; i < c.connections; i++ {
		st, err := radosstore.Open(radosstore.Options{ConfFile: c.conf, User: c.user, PoolPrefix: prefix,
			Classes: server.Classes(), CreatePools: true})
		if err != nil {
			closeAll()
			return nil, nil, nil, fmt.Errorf("open Ceph cluster %s: %w", c.conf, err)
		}
		stores = append(stores, st)
	}
	seq := 0
	open := func(ctx context.Context, name string) ([]objstore.IOContext, func(), error) {
		// A fresh name per call: the other connections cache the ioctx of
		// a deleted pool of the same name.
		seq++
		name = fmt.Sprintf("%s-%d", name, seq)
		if err := stores[0].CreatePool(ctx, name); err != nil {
			return nil, nil, err
		}
		cleanup := func() { stores[0].DeletePool(context.Background(), name) }
		var ios []objstore.IOContext
		for _, st := range stores {
			io, err := st.IOContext(ctx, name)
			if err != nil {
				cleanup()
				return nil, nil, err
			}
			ios = append(ios, io)
		}
		return ios, cleanup, nil
	}
	counters := func() map[string]int64 {
		sum := map[string]int64{}
		for _, st := range stores {
			if cs, ok := st.(counterer); ok {
				for k, v := range cs.Counters() {
					sum[k] += v
				}
			}
		}
		return sum
	}
	return open, counters, closeAll, nil
}
