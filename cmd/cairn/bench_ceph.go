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
}

func (c *cephFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.conf, "ceph-conf", "", "ceph.conf of the cluster (backend rados)")
	fs.StringVar(&c.user, "ceph-user", "admin", "Ceph client name without \"client.\" (backend rados)")
	fs.StringVar(&c.poolPrefix, "ceph-pool-prefix", "", "prefix of the benchmark's pool names (default cairn-bench-<pid>-); its pools are deleted afterwards (backend rados)")
}

// counterer is a store that reports internal counters (the RADOS
// backend's optimistic-path statistics).
type counterer interface{ Counters() map[string]int64 }

// open connects one store (one librados connection) for the whole
// benchmark and returns a pool opener whose cleanup deletes the pool.
func (c *cephFlags) open(ctx context.Context) (func(context.Context, string) (objstore.IOContext, func(), error), func() map[string]int64, func(), error) {
	if c.conf == "" {
		return nil, nil, nil, fmt.Errorf("--backend rados needs --ceph-conf")
	}
	prefix := c.poolPrefix
	if prefix == "" {
		prefix = fmt.Sprintf("cairn-bench-%d-", os.Getpid())
	}
	st, err := radosstore.Open(radosstore.Options{ConfFile: c.conf, User: c.user, PoolPrefix: prefix,
		Classes: server.Classes(), CreatePools: true})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open Ceph cluster %s: %w", c.conf, err)
	}
	open := func(ctx context.Context, name string) (objstore.IOContext, func(), error) {
		if err := st.CreatePool(ctx, name); err != nil {
			return nil, nil, err
		}
		io, err := st.IOContext(ctx, name)
		if err != nil {
			st.DeletePool(ctx, name)
			return nil, nil, err
		}
		return io, func() { st.DeletePool(context.Background(), name) }, nil
	}
	var counters func() map[string]int64
	if cs, ok := st.(counterer); ok {
		counters = cs.Counters
	}
	return open, counters, func() { st.Close() }, nil
}
