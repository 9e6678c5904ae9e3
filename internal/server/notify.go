package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/api"
	notifconfig "github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/delivery"
	"github.com/cairn-s3/cairn/internal/notify/endpoint"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/service"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/s3api"
)

// endpointPusher pushes non-persistent topics' events during the request
// through the shared endpoint factory (HTTP, Kafka, AMQP).
type endpointPusher struct {
	cache *endpoint.Cache
	opts  endpoint.Options
}

func (p endpointPusher) Push(ctx context.Context, t *topic.Topic, rec *event.Record) error {
	o := p.opts
	o.Cache = p.cache
	ep, err := endpoint.New(t.Settings, o)
	if err != nil {
		return err
	}
	defer ep.Close()
	msg, err := endpoint.NewMessage(t.Name, rec)
	if err != nil {
		return err
	}
	return ep.Push(ctx, msg)
}

// deliveryIdentity names this gateway among the live ones (delivery
// leases and membership). The id is kept in <data-dir>/gateway.id, so a
// gateway restarted on the same data directory is the same gateway and
// takes over its dead incarnation's leases at once (reclaim true). That is
// only safe while no other live process uses the id, so the process holds
// an exclusive flock on <data-dir>/gateway.lock for its lifetime (the OS
// drops it when the process dies). Two gateways on one data directory
// (possible on the RADOS backend) make the second one use a fresh id
// without reclaiming.
func (g *Gateway) deliveryIdentity(dataDir string) (id string, reclaim bool, err error) {
	host, _ := os.Hostname()
	fresh := func() string {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return fmt.Sprintf("%s.%d.%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	f, err := os.OpenFile(filepath.Join(dataDir, "gateway.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		g.Log.Warn("data directory used by another live gateway: delivery runs under a fresh id", "data_dir", dataDir, "err", err)
		return fresh(), false, nil
	}
	g.closers = append(g.closers, func() { _ = f.Close() })
	path := filepath.Join(dataDir, "gateway.id")
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b)), true, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	id = host + "." + hex.EncodeToString(b)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, err
	}
	return id, true, nil
}

// rescanOnSuccess calls rescan after every successful SNS request: a new,
// deleted or re-configured topic changes the shard set or its settings.
// (The action is in the body, which the SNS handler consumes; a read-only
// action costs one scan, and scans coalesce.)
func rescanOnSuccess(h http.Handler, rescan func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		if sw.status < 300 {
			rescan()
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// openNotifications builds the notification service (the driver's
// Notifier) and returns a function that, once the driver and HTTP API exist,
// mounts the SNS/bucket/admin handlers and starts delivery.
func (g *Gateway) openNotifications(ctx context.Context, cfg *config.Config) (*service.Service, error) {
	cache := endpoint.NewCache()
	g.closers = append(g.closers, func() { _ = cache.Close() })
	qopts := queue.Options{Capacity: uint64(cfg.NotifQueueSize), DeferLinger: cfg.NotifCommitLinger}
	if cfg.NotifCommitLinger > 0 {
		// A deferred commit refills the pool up to a linger later: more
		// reservations are consumed and not yet replaced at any time.
		qopts.PoolMax = 2 * queue.DefaultPoolMax
	}
	svc, err := service.New(ctx, service.Options{
		Store: g.Store, NumShards: cfg.NotifShards, Zonegroup: cfg.Region, EventSource: cfg.NotifEventSource,
		ConfigMode:   notifconfig.Mode(cfg.NotifConfigMode),
		Queue:        qopts,
		DeferCommits: cfg.NotifCommitLinger > 0,
		Pusher:       endpointPusher{cache: cache, opts: endpoint.Options{KafkaCompression: cfg.NotifKafkaCompression}},
		Logger:       g.Log.With("component", "notify"),
		Secrets:      g.secrets,
	})
	if err != nil {
		return nil, err
	}
	svc.Start()
	g.Registry.MustRegister(svc.QueueCollector())
	g.closers = append(g.closers, func() { _ = svc.Close(context.Background()) })
	g.notifyCache = cache
	return svc, nil
}

func (g *Gateway) mountNotifications(cfg *config.Config, svc *service.Service, d *driver.Driver, srv *s3api.Server) error {
	a, err := api.New(api.Options{
		Service: svc, Bucket: d.GetBucket, Logger: g.Log.With("component", "notify-api"),
		AllowCleartextSecrets: cfg.AllowInsecureEndpointSecrets,
		RequirePublishPolicy:  cfg.TopicRequirePublishPolicy,
		Caller: func(ctx context.Context) (api.Caller, bool) {
			id, ok := s3api.IdentityFrom(ctx)
			rm := driver.RequestFrom(ctx)
			p := id.User.Principal()
			return api.Caller{User: id.User.ID, Admin: id.User.Admin, SourceIP: rm.SourceIP, Secure: rm.Secure, Principal: &p}, ok
		},
	})
	if err != nil {
		return err
	}
	var mgr *delivery.Manager
	srv.SetSNSHandler(rescanOnSuccess(a.SNS(), func() {
		if mgr != nil {
			mgr.Rescan()
		}
	}))
	srv.HandleBucketSubresource("PUT", "notification", a.PutBucketNotification)
	srv.HandleBucketSubresource("GET", "notification", a.GetBucketNotification)
	srv.HandleBucketSubresource("DELETE", "notification", a.DeleteBucketNotification)
	srv.HandleAdmin("topic", a.AdminTopic)
	srv.HandleAdmin("notification", a.AdminNotification)

	cache := g.notifyCache
	owner, reclaim, err := g.deliveryIdentity(cfg.DataDir)
	if err != nil {
		return err
	}
	// Writes record link intents under this identity; a dead incarnation's
	// (same id, flock held) are resolved now, before serving, so every
	// version it made visible has its event (docs/design/delivery.md).
	svc.SetOwner(owner, reclaim)
	if reclaim {
		t0 := time.Now()
		done, left, err := d.RecoverIntents(context.Background())
		switch {
		case err != nil:
			g.Log.Warn("notification intent recovery failed; retried at the next start", "err", err)
		case done > 0 || left > 0:
			g.Log.Info("notification intents resolved", "resolved", done, "left", left,
				"events_recovered", svc.Counters.Recovered.Load(), "took", time.Since(t0))
		}
	}
	m, err := delivery.New(delivery.Config{
		Owner: owner, ReclaimOwnLeases: reclaim, IO: svc.Queues().IO(), Registry: svc.Queues(), Topics: svc,
		Endpoints: delivery.EndpointsFunc(func(ctx context.Context, t *topic.Topic) (push.Endpoint, error) {
			return endpoint.New(t.Settings, endpoint.Options{Cache: cache, MaxInFlight: -1, KafkaCompression: cfg.NotifKafkaCompression})
		}),
		MaxRetries: cfg.PersistMaxRetries, TTL: cfg.PersistTTL, RetrySleep: cfg.PersistSleep,
		LeaseDuration: cfg.NotifLease, ScanInterval: cfg.NotifScan, PushBatch: cfg.NotifPushPipeline, FailureLog: svc.FailureLog(),
		WakeBatch: cfg.NotifWakeBatch, MaxWakeGap: cfg.NotifMaxWakeGap,
		Logger: g.Log.With("component", "delivery"), Registerer: g.Registry,
	})
	if err != nil {
		return err
	}
	mgr = m
	if err := m.Start(); err != nil {
		return err
	}
	g.closers = append(g.closers, func() { _ = m.Stop(context.Background()) })
	return nil
}
