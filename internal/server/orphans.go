package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/lock"
	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/s3api"
)

// Where the orphan job's lease lives: default.rgw.log, namespace gc.
const (
	orphanNS       = "gc"
	orphanLeaseOID = "orphan_scan"
	orphanLockName = "orphan_scan"
)

// openOrphans serves /admin/gc (gc list|process) and /admin/orphans
// (orphans find|rm), and starts the periodic orphan scan.
func (g *Gateway) openOrphans(ctx context.Context, cfg *config.Config, d *driver.Driver, api *s3api.Server) error {
	api.HandleAdmin("gc", func(w http.ResponseWriter, r *http.Request) error { return adminGC(d, w, r) })
	api.HandleAdmin("orphans", func(w http.ResponseWriter, r *http.Request) error {
		return adminOrphans(d, cfg.OrphanMinAge, w, r)
	})
	if cfg.OrphanScanInterval <= 0 {
		return nil
	}
	io, err := g.Store.IOContext(ctx, driver.PoolLog)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	j := &orphanJob{d: d, io: io.WithNamespace(orphanNS), every: cfg.OrphanScanInterval, minAge: cfg.OrphanMinAge, rate: cfg.OrphanScanRate,
		owner: host + "@" + cfg.Listen, log: g.Log.With("component", "orphans")}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); j.run(runCtx) }()
	g.closers = append(g.closers, func() { cancel(); <-done })
	return nil
}

// orphanJob runs the orphan scan about once per interval across all the
// gateways of a cluster: the lock on orphanLeaseOID, taken for one
// interval and never released, is the schedule. Whoever takes it scans;
// the others find it busy until it lapses. A gateway that dies mid-scan
// leaves the next scan to whoever takes the lapsed lock.
type orphanJob struct {
	d      *driver.Driver
	io     objstore.IOContext
	every  time.Duration
	minAge time.Duration
	rate   int
	owner  string
	tick   time.Duration // how often to try the lease (0: min(every/4, 1 min))
	log    interface {
		Info(string, ...any)
		Warn(string, ...any)
	}
}

func (j *orphanJob) run(ctx context.Context) {
	// Try a few times per interval (at most every minute), so the scan
	// follows the lease's lapse closely.
	tick := j.tick
	if tick <= 0 {
		tick = min(max(j.every/4, time.Second), time.Minute)
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !j.take(ctx) {
			continue
		}
		rep, err := j.d.ScanOrphans(ctx, driver.OrphanOptions{MinAge: j.minAge, Remove: true, MaxListed: 1, Rate: j.rate})
		if err != nil {
			if ctx.Err() == nil {
				j.log.Warn("orphan scan", "err", err)
			}
			continue
		}
		j.log.Info("orphan scan", "examined", rep.Examined, "removed", rep.Removed, "bytes", rep.OrphanBytes,
			"completed_uploads", rep.Uploads, "stale_uploads", rep.StaleUploads)
	}
}

// take tries to take the interval's lease.
func (j *orphanJob) take(ctx context.Context) bool {
	var b [12]byte
	_, _ = rand.Read(b[:])
	err := lock.Lock(ctx, j.io, orphanLeaseOID, lock.Options{Name: orphanLockName, Type: lock.Exclusive,
		Cookie: hex.EncodeToString(b[:]), Locker: j.owner, Description: "orphan scan", Duration: j.every})
	if err != nil && !errors.Is(err, objstore.ErrBusy) && ctx.Err() == nil {
		j.log.Warn("orphan scan lease", "err", err)
	}
	return err == nil
}

// adminGC: GET ?list[&include-all] (gc list), POST ?process[&include-all]
// (gc process), as radosgw-admin's.
func adminGC(d *driver.Driver, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	all, err := boolParam(q.Get("include-all"))
	if err != nil {
		return err
	}
	switch {
	case r.Method == http.MethodGet:
		l, err := d.GCList(r.Context(), all)
		if err != nil {
			return err
		}
		return s3api.WriteJSON(w, http.StatusOK, l)
	case r.Method == http.MethodPost:
		n, err := d.GCProcess(r.Context(), all)
		if err != nil {
			return err
		}
		return s3api.WriteJSON(w, http.StatusOK, map[string]int{"processed": n})
	}
	return fmt.Errorf("%w: %s /admin/gc", driver.ErrInvalidArgument, r.Method)
}

// adminOrphans: GET (orphans find), DELETE (orphans rm); min-age (a Go
// duration) overrides the gateway's orphan-min-age.
func adminOrphans(d *driver.Driver, minAge time.Duration, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if v := q.Get("min-age"); v != "" {
		age, err := time.ParseDuration(v)
		if err != nil || age < 0 {
			return fmt.Errorf("%w: min-age %q is not a duration >= 0 (e.g. 24h)", driver.ErrInvalidArgument, v)
		}
		minAge = age
	}
	max := 0
	if v := q.Get("max-entries"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: max-entries %q", driver.ErrInvalidArgument, v)
		}
		max = n
	}
	var remove bool
	switch r.Method {
	case http.MethodGet:
	case http.MethodDelete:
		remove = true
	default:
		return fmt.Errorf("%w: %s /admin/orphans", driver.ErrInvalidArgument, r.Method)
	}
	rep, err := d.ScanOrphans(r.Context(), driver.OrphanOptions{MinAge: minAge, Remove: remove, MaxListed: max})
	if err != nil {
		return err
	}
	return s3api.WriteJSON(w, http.StatusOK, rep)
}

func boolParam(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: %q is not true or false", driver.ErrInvalidArgument, v)
	}
	return b, nil
}
