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

// Where the orphan scan's locks live: default.rgw.log, namespace gc,
// object orphan_scan. Two locks: orphanLockName is the periodic job's
// schedule (taken for one interval, never released), orphanRunLock is held
// by whichever scan runs (the job's, orphans find|rm) and renewed as it
// goes, so no two scans overlap however long one takes.
const (
	orphanNS       = "gc"
	orphanLeaseOID = "orphan_scan"
	orphanLockName = "orphan_scan"
	orphanRunLock  = "orphan_scan.run"
	// orphanRunLease: how long a scan that stops renewing (a dead or
	// stalled gateway) keeps others from scanning.
	orphanRunLease = 2 * time.Minute
	// orphanAdminWait: how long orphans find|rm waits for a running scan
	// (most are short, e.g. the periodic one with nothing old to check).
	orphanAdminWait = 30 * time.Second
)

// openOrphans serves /admin/gc (gc list|process) and /admin/orphans
// (orphans find|rm), and starts the periodic orphan scan.
func (g *Gateway) openOrphans(ctx context.Context, cfg *config.Config, d *driver.Driver, api *s3api.Server) error {
	io, err := g.Store.IOContext(ctx, driver.PoolLog)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	sc := &orphanScans{d: d, io: io.WithNamespace(orphanNS), owner: host + "@" + cfg.Listen, lease: orphanRunLease, wait: orphanAdminWait}
	api.HandleAdmin("gc", func(w http.ResponseWriter, r *http.Request) error { return adminGC(d, w, r) })
	api.HandleAdmin("orphans", func(w http.ResponseWriter, r *http.Request) error {
		return adminOrphans(sc, cfg.OrphanMinAge, w, r)
	})
	if cfg.OrphanScanInterval <= 0 {
		return nil
	}
	j := &orphanJob{scans: sc, every: cfg.OrphanScanInterval, minAge: cfg.OrphanMinAge, rate: cfg.OrphanScanRate,
		log: g.Log.With("component", "orphans")}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); j.run(runCtx) }()
	g.closers = append(g.closers, func() { cancel(); <-done })
	return nil
}

// orphanScans runs scans of one gateway, each under the run lease.
type orphanScans struct {
	d     *driver.Driver
	io    objstore.IOContext
	owner string
	lease time.Duration
	wait  time.Duration    // how long an admin scan waits for the lease
	now   func() time.Time // the lease's clock (nil: time.Now)
}

// take takes the run lease: ErrBusy while another scan runs.
func (sc *orphanScans) take(ctx context.Context) (*lock.Lease, error) {
	return lock.Take(ctx, sc.io, orphanLeaseOID, lock.Options{Name: orphanRunLock, Locker: sc.owner,
		Description: "orphan scan running", Duration: sc.lease}, sc.now)
}

// await takes the run lease, waiting up to sc.wait for a running scan to
// end: ErrBusy after that.
func (sc *orphanScans) await(ctx context.Context) (*lock.Lease, error) {
	deadline := time.Now().Add(sc.wait)
	for {
		l, err := sc.take(ctx)
		if !errors.Is(err, objstore.ErrBusy) || !time.Now().Before(deadline) {
			return l, err
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// scan runs one scan under l, which it renews as it goes; the scan stops
// (lock.ErrLost) before any removal once the lease is lost.
func (sc *orphanScans) scan(ctx context.Context, l *lock.Lease, opt driver.OrphanOptions) (driver.OrphanReport, error) {
	opt.Hold = l.Hold
	return sc.d.ScanOrphans(ctx, opt)
}

// release drops the run lease, even when ctx (a request's) has ended.
func (sc *orphanScans) release(l *lock.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.Release(ctx)
}

// orphanJob runs the orphan scan about once per interval across all the
// gateways of a cluster: the lock orphanLockName, taken for one interval
// and never released, is the schedule. Whoever takes it (holding the run
// lease) scans; the others find one of the two busy. The schedule is
// taken again when the scan ends, so a scan longer than the interval is
// not followed by another at once. A gateway that dies mid-scan leaves
// the next scan to whoever takes the lapsed locks.
type orphanJob struct {
	scans  *orphanScans
	every  time.Duration
	minAge time.Duration
	rate   int
	tick   time.Duration // how often to try the lease (0: min(every/4, 1 min))
	cookie string        // the schedule's cookie
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
		j.once(ctx)
	}
}

// once scans if this gateway gets the interval's schedule and the run
// lease. A schedule taken while another scan runs (orphans rm by hand) is
// given back, so the next tick tries again.
func (j *orphanJob) once(ctx context.Context) {
	if !j.take(ctx, false) {
		return
	}
	l, err := j.scans.take(ctx)
	if err != nil {
		if !errors.Is(err, objstore.ErrBusy) && ctx.Err() == nil {
			j.log.Warn("orphan scan lease", "err", err)
		}
		_ = lock.Unlock(ctx, j.scans.io, orphanLeaseOID, orphanLockName, j.cookie)
		return
	}
	defer j.scans.release(l)
	rep, err := j.scans.scan(ctx, l, driver.OrphanOptions{MinAge: j.minAge, Remove: true, MaxListed: 1, Rate: j.rate})
	j.take(ctx, true)
	if err != nil {
		if ctx.Err() == nil {
			j.log.Warn("orphan scan", "err", err)
		}
		return
	}
	j.log.Info("orphan scan", "examined", rep.Examined, "removed", rep.Removed, "bytes", rep.OrphanBytes,
		"completed_uploads", rep.Uploads, "stale_uploads", rep.StaleUploads)
}

// take tries to take the interval's schedule lock, or with again to take
// it anew (renewed, or taken again if it lapsed during the scan).
func (j *orphanJob) take(ctx context.Context, again bool) bool {
	if !again {
		var b [12]byte
		_, _ = rand.Read(b[:])
		j.cookie = hex.EncodeToString(b[:])
	}
	err := lock.Lock(ctx, j.scans.io, orphanLeaseOID, lock.Options{Name: orphanLockName, Type: lock.Exclusive,
		Cookie: j.cookie, Locker: j.scans.owner, Description: "orphan scan", Duration: j.every, Renew: again})
	if err != nil && !errors.Is(err, objstore.ErrBusy) && ctx.Err() == nil {
		j.log.Warn("orphan scan schedule", "err", err)
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
// duration) overrides the gateway's orphan-min-age. SlowDown when another
// scan runs longer than orphanAdminWait.
func adminOrphans(sc *orphanScans, minAge time.Duration, w http.ResponseWriter, r *http.Request) error {
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
	l, err := sc.await(r.Context())
	if errors.Is(err, objstore.ErrBusy) {
		return fmt.Errorf("%w: another orphan scan is running (%v); try again when it ends", driver.ErrSlowDown, err)
	}
	if err != nil {
		return err
	}
	defer sc.release(l)
	rep, err := sc.scan(r.Context(), l, driver.OrphanOptions{MinAge: minAge, Remove: remove, MaxListed: max})
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
