package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/reshard"
	"github.com/cairn-s3/cairn/internal/s3api"
)

// openReshard starts the reshard manager (dynamic trigger when enabled, the
// reshard queue either way) and serves /admin/reshard, the routes
// `cairn admin bucket reshard` and `cairn admin reshard ...` call. Several
// gateways on one cluster each run one; the reshard record's lease lets one
// drive a bucket at a time.
func (g *Gateway) openReshard(ctx context.Context, cfg *config.Config, d *driver.Driver, api *s3api.Server) error {
	m, err := reshard.New(ctx, reshard.Config{
		Driver: d, Store: g.Store, Enabled: cfg.DynamicResharding,
		MaxObjsPerShard: cfg.MaxObjsPerShard, MaxDynamicShards: cfg.MaxDynamicShards,
		Interval: cfg.ReshardInterval, CopyRateLimit: cfg.ReshardCopyRate, CopyRateAdaptive: cfg.ReshardCopyAdaptive, CopyLoad: cfg.ReshardCopyLoad, Logger: g.Log.With("component", "reshard"),
	})
	if err != nil {
		return err
	}
	m.Start()
	g.closers = append(g.closers, m.Close)
	api.HandleAdmin("reshard", func(w http.ResponseWriter, r *http.Request) error { return adminReshard(m, w, r) })
	return nil
}

// adminReshard: POST ?bucket=B&num-shards=N (runs the reshard, replies
// with its result), GET ?list, GET ?status&bucket=B, DELETE ?bucket=B.
func adminReshard(m *reshard.Manager, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	bucket := q.Get("bucket")
	needBucket := func() error {
		if bucket == "" {
			return fmt.Errorf("%w: bucket is required", driver.ErrInvalidArgument)
		}
		return nil
	}
	switch {
	case r.Method == http.MethodPost:
		if err := needBucket(); err != nil {
			return err
		}
		n, err := strconv.Atoi(q.Get("num-shards"))
		if err != nil {
			return fmt.Errorf("%w: num-shards %q: want a number", driver.ErrInvalidArgument, q.Get("num-shards"))
		}
		res, err := m.Reshard(r.Context(), bucket, n)
		if err != nil {
			return err
		}
		return s3api.WriteJSON(w, http.StatusOK, map[string]any{
			"bucket": res.Bucket, "from_shards": res.From.NumShards, "to_shards": res.To.NumShards,
			"entries_copied": res.Copied, "block_ms": res.Block.Milliseconds(), "total_ms": res.Total.Milliseconds(),
		})
	case r.Method == http.MethodGet && q.Has("list"):
		l, err := m.List(r.Context())
		if err != nil {
			return err
		}
		return s3api.WriteJSON(w, http.StatusOK, l)
	case r.Method == http.MethodGet:
		if err := needBucket(); err != nil {
			return err
		}
		st, err := m.Status(r.Context(), bucket)
		if err != nil {
			return err
		}
		return s3api.WriteJSON(w, http.StatusOK, st)
	case r.Method == http.MethodDelete:
		if err := needBucket(); err != nil {
			return err
		}
		if err := m.Cancel(r.Context(), bucket); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return fmt.Errorf("%w: %s /admin/reshard", driver.ErrInvalidArgument, r.Method)
}
