package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"

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

// instanceID names this gateway process among the live ones (delivery
// leases and membership).
func instanceID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s.%d.%s", host, os.Getpid(), hex.EncodeToString(b))
}

// openNotifications builds the notification service (the driver's
// Notifier) and returns a function that, once the driver and HTTP API exist,
// mounts the SNS/bucket/admin handlers and starts delivery.
func (g *Gateway) openNotifications(ctx context.Context, cfg *config.Config) (*service.Service, error) {
	cache := endpoint.NewCache()
	g.closers = append(g.closers, func() { _ = cache.Close() })
	svc, err := service.New(ctx, service.Options{
		Store: g.Store, NumShards: cfg.NotifShards, Zonegroup: cfg.Region, EventSource: cfg.NotifEventSource,
		ConfigMode: notifconfig.Mode(cfg.NotifConfigMode),
		Queue:      queue.Options{Capacity: uint64(cfg.NotifQueueSize)},
		Pusher:     endpointPusher{cache: cache, opts: endpoint.Options{KafkaCompression: cfg.NotifKafkaCompression}},
		Logger:     g.Log.With("component", "notify"),
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
			return api.Caller{User: id.User.ID, Admin: id.User.Admin}, ok
		},
	})
	if err != nil {
		return err
	}
	var mgr *delivery.Manager
	sns := a.SNS()
	srv.SetSNSHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sns.ServeHTTP(w, r)
		// A new, deleted or re-configured topic changes the shard set:
		// look at the registry now instead of at the next scan.
		switch r.Form.Get("Action") {
		case "CreateTopic", "DeleteTopic", "SetTopicAttributes":
			if mgr != nil {
				mgr.Rescan()
			}
		}
	}))
	srv.HandleBucketSubresource("PUT", "notification", a.PutBucketNotification)
	srv.HandleBucketSubresource("GET", "notification", a.GetBucketNotification)
	srv.HandleBucketSubresource("DELETE", "notification", a.DeleteBucketNotification)
	srv.HandleAdmin("topic", a.AdminTopic)
	srv.HandleAdmin("notification", a.AdminNotification)

	cache := g.notifyCache
	m, err := delivery.New(delivery.Config{
		Owner: instanceID(), IO: svc.Queues().IO(), Registry: svc.Queues(), Topics: svc,
		Endpoints: delivery.EndpointsFunc(func(ctx context.Context, t *topic.Topic) (push.Endpoint, error) {
			return endpoint.New(t.Settings, endpoint.Options{Cache: cache, MaxInFlight: -1, KafkaCompression: cfg.NotifKafkaCompression})
		}),
		MaxRetries: cfg.PersistMaxRetries, TTL: cfg.PersistTTL, RetrySleep: cfg.PersistSleep,
		LeaseDuration: cfg.NotifLease, ScanInterval: cfg.NotifScan, FailureLog: svc.FailureLog(),
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
