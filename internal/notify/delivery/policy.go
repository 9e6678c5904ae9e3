package delivery

import (
	"math/rand/v2"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// policy is a topic's effective retry and expiry rules: its attributes over
// the manager's defaults.
type policy struct {
	maxRetries int           // 0 = unlimited
	ttl        time.Duration // 0 = forever
	backoffCap time.Duration // >= initial
	initial    time.Duration
}

func resolvePolicy(c *Config, t *topic.Topic) policy {
	p := policy{maxRetries: c.MaxRetries, ttl: c.TTL, initial: c.InitialBackoff}
	sleep := c.RetrySleep
	if t != nil {
		s := t.Settings
		if s.MaxRetries != topic.UseGlobal && s.MaxRetries >= 0 {
			p.maxRetries = s.MaxRetries
		}
		if s.TimeToLive != topic.UseGlobal && s.TimeToLive >= 0 {
			p.ttl = time.Duration(s.TimeToLive) * time.Second
		}
		if s.RetrySleepDuration != topic.UseGlobal && s.RetrySleepDuration >= 0 {
			sleep = time.Duration(s.RetrySleepDuration) * time.Second
		}
	}
	p.backoffCap = c.MaxBackoff
	if sleep > 0 {
		// retry_sleep_duration caps the schedule: a topic that says "retry
		// every 10 s" never waits longer than 10 s between attempts.
		p.backoffCap = sleep
	}
	if p.initial > p.backoffCap {
		p.initial = p.backoffCap
	}
	return p
}

// backoff is the delay before the attempt that follows failed attempt
// number retries (1-based): initial·2^(retries-1), capped, jittered to
// [d/2, d] so that many keys failing together do not retry in lockstep.
func (p policy) backoff(retries uint32) time.Duration {
	d := p.initial
	for i := uint32(1); i < retries && d < p.backoffCap; i++ {
		d *= 2
	}
	d = min(d, p.backoffCap)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// expired says why an entry must no longer be delivered, or "".
func (p policy) expired(now, committed time.Time, retries uint32) string {
	if p.ttl > 0 && !committed.IsZero() && now.Sub(committed) > p.ttl {
		return reasonTTL
	}
	if p.maxRetries > 0 && int64(retries) > int64(p.maxRetries) {
		return reasonMaxRetries
	}
	return ""
}

// Expiry reasons (label values of the expired counter).
const (
	reasonTTL        = "ttl"
	reasonMaxRetries = "max_retries"
	reasonPermanent  = "permanent"
	reasonCorrupt    = "undecodable"
)
