package server

import (
	"context"
	"time"

	"github.com/cairn-s3/cairn/internal/accesslog"
	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/ratelimit"
	"github.com/cairn-s3/cairn/internal/s3api"
	"github.com/cairn-s3/cairn/internal/usage"
)

// defaultQuota is the quota an RGW-style default option pair gives: none
// when both are -1.
func defaultQuota(maxObjects, maxSize int64) driver.Quota {
	q := driver.Quota{Enabled: maxObjects >= 0 || maxSize >= 0, MaxObjects: maxObjects, MaxSize: maxSize}
	q.Normalize()
	return q
}

// openLimits wires quotas (the driver), the rate limiter and the usage
// log into the S3 server's config. The usage log is flushed on Close,
// before the store closes.
func (g *Gateway) openLimits(cfg *config.Config, api *s3api.Config) error {
	api.Limits = g.Driver
	api.RateLimiter = ratelimit.New(ratelimit.Options{Interval: cfg.RateLimitInterval})
	al, err := accesslog.New(accesslog.Options{
		Driver: g.Driver, IO: g.Driver.LogIO(), BootID: g.Driver.BootID(), Region: cfg.Region,
		RollTime: cfg.BucketLoggingObjRollTime, Logger: g.Log.With("component", "accesslog"),
	})
	if err != nil {
		return err
	}
	al.Start()
	api.AccessLog = al
	g.closers = append(g.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := al.Close(ctx); err != nil {
			g.Log.Warn("bucket logging: shutdown flush failed", "err", err)
		}
	})
	if !cfg.UsageLog {
		return nil
	}
	ul, err := usage.New(usage.Options{
		IO: g.Driver.LogIO(), BootID: g.Driver.BootID(), FlushInterval: cfg.UsageFlushInterval,
		Logger: g.Log.With("component", "usage"),
	})
	if err != nil {
		return err
	}
	ul.Start()
	api.Usage = ul
	g.closers = append(g.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ul.Close(ctx); err != nil {
			g.Log.Warn("usage log: final flush failed", "err", err)
		}
	})
	return nil
}
