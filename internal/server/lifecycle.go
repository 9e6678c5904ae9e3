package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/lcproc"
	"github.com/cairn-s3/cairn/internal/lifecycle"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/s3api"
)

// openLifecycle starts the lifecycle worker (every gateway runs one; shard
// leases spread the buckets) and serves /admin/lc, the routes of
// `cairn admin lc list|process|status`.
func (g *Gateway) openLifecycle(ctx context.Context, cfg *config.Config, d *driver.Driver, api *s3api.Server) error {
	io, err := g.Store.IOContext(ctx, driver.PoolLog)
	if err != nil {
		return err
	}
	day := cfg.LCDebugInterval
	if day <= 0 {
		day = lifecycle.Day
	}
	host, _ := os.Hostname()
	w, err := lifecycle.NewWorker(lifecycle.Config{
		IO: io.WithNamespace(lifecycle.Namespace),
		Processor: &lcproc.Processor{Driver: d, Day: day, TransitionRate: cfg.LCTransitionRate,
			BusyRate: cfg.LCTransitionBusyRate, Busy: func() bool { return api.InFlight() > 0 },
			Logger: g.Log.With("component", "lifecycle")},
		// Stable across restarts of this gateway, so a restarted one
		// reclaims the leases its crashed incarnation held at once.
		Owner:  host + "@" + cfg.Listen,
		Shards: cfg.LCMaxObjs, Day: day, Rate: cfg.LCRate,
		// About one checkpoint a second when paced: a restart redoes at
		// most a second of examination.
		CheckpointEvery: max(100, cfg.LCRate),
		Logger:          g.Log.With("component", "lifecycle"),
	})
	if err != nil {
		return err
	}
	d.SetLifecycleRegistry(w)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	g.closers = append(g.closers, func() { cancel(); <-done })
	api.HandleAdmin("lc", func(rw http.ResponseWriter, r *http.Request) error { return adminLC(w, rw, r) })
	return nil
}

// adminLC: GET ?list, GET ?status&bucket=B, POST ?bucket=B (process now).
func adminLC(w *lifecycle.Worker, rw http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	bucket := q.Get("bucket")
	notFound := func(err error) error {
		if errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("%w: bucket %q", driver.ErrNoSuchLifecycle, bucket)
		}
		return err
	}
	switch {
	case r.Method == http.MethodGet && q.Has("list"):
		l, err := w.List(r.Context())
		if err != nil {
			return err
		}
		return s3api.WriteJSON(rw, http.StatusOK, l)
	case bucket == "":
		return fmt.Errorf("%w: bucket is required", driver.ErrInvalidArgument)
	case r.Method == http.MethodGet:
		st, err := w.Get(r.Context(), bucket)
		if err != nil {
			return notFound(err)
		}
		return s3api.WriteJSON(rw, http.StatusOK, st)
	case r.Method == http.MethodPost:
		if err := w.Process(r.Context(), bucket); err != nil {
			return notFound(err)
		}
		st, err := w.Get(r.Context(), bucket)
		if err != nil {
			return notFound(err)
		}
		return s3api.WriteJSON(rw, http.StatusAccepted, st)
	}
	return fmt.Errorf("%w: %s /admin/lc", driver.ErrInvalidArgument, r.Method)
}
