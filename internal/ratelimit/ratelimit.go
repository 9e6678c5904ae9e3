// Package ratelimit holds RGW-style request rate limits: per user and per
// bucket, read and write operations and bytes per interval (a minute, as in
// RGW), kept in token buckets in this gateway's memory. Limits are per
// gateway, not global: N gateways admit up to N times a limit, as RGW's
// do. It knows nothing about HTTP.
package ratelimit

import (
	"sync"
	"time"
)

// Limit is one user's or bucket's rate limit (RGW's ratelimit spec). A
// zero maximum is unlimited; a disabled Limit limits nothing.
type Limit struct {
	Enabled       bool  `json:"enabled"`
	MaxReadOps    int64 `json:"max_read_ops"`
	MaxWriteOps   int64 `json:"max_write_ops"`
	MaxReadBytes  int64 `json:"max_read_bytes"`
	MaxWriteBytes int64 `json:"max_write_bytes"`
}

// OrNone returns *l, or the zero Limit for nil.
func (l *Limit) OrNone() Limit {
	if l == nil {
		return Limit{}
	}
	return *l
}

// Active reports whether l limits anything.
func (l Limit) Active() bool {
	return l.Enabled && (l.MaxReadOps > 0 || l.MaxWriteOps > 0 || l.MaxReadBytes > 0 || l.MaxWriteBytes > 0)
}

func (l Limit) max(write bool) (ops, bytes int64) {
	if write {
		return l.MaxWriteOps, l.MaxWriteBytes
	}
	return l.MaxReadOps, l.MaxReadBytes
}

// Options configure a Limiter.
type Options struct {
	// Interval is the window the maxima are per: a full bucket refills over
	// one Interval. Default one minute (RGW's).
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// maxEntries bounds the token buckets kept; when reached, buckets that
// have refilled (idle) are dropped.
const maxEntries = 1 << 16

// Limiter holds the token buckets. Safe for concurrent use.
type Limiter struct {
	opts Options
	mu   sync.Mutex
	m    map[string]*bucket
}

type bucket struct {
	ops, bytes float64 // tokens left; bytes may go negative (charged after the fact)
	last       time.Time
	maxOps     int64
	maxBytes   int64
}

// New returns a Limiter.
func New(opts Options) *Limiter {
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Limiter{opts: opts, m: map[string]*bucket{}}
}

// Key names what a request is charged to: "u/<uid>" or "b/<bucket>".
type Key struct {
	Name  string
	Limit Limit
}

func (lm *Limiter) get(name string, write bool, l Limit, now time.Time) *bucket {
	k := name + "/r"
	if write {
		k = name + "/w"
	}
	mo, mb := l.max(write)
	b := lm.m[k]
	if b == nil {
		if len(lm.m) >= maxEntries {
			lm.evict(now)
		}
		b = &bucket{ops: float64(mo), bytes: float64(mb), last: now, maxOps: mo, maxBytes: mb}
		lm.m[k] = b
	}
	if b.maxOps != mo || b.maxBytes != mb { // the limit changed: start full
		*b = bucket{ops: float64(mo), bytes: float64(mb), last: now, maxOps: mo, maxBytes: mb}
	}
	if el := now.Sub(b.last); el > 0 {
		f := float64(el) / float64(lm.opts.Interval)
		b.ops = min(float64(mo), b.ops+f*float64(mo))
		b.bytes = min(float64(mb), b.bytes+f*float64(mb))
		b.last = now
	}
	return b
}

func (lm *Limiter) evict(now time.Time) {
	for k, b := range lm.m {
		if now.Sub(b.last) >= lm.opts.Interval {
			delete(lm.m, k)
		}
	}
	if len(lm.m) >= maxEntries {
		lm.m = map[string]*bucket{}
	}
}

// Allow admits one operation (write or read) against every key whose
// Limit is active, all or nothing: false when any has no operation left
// or has spent its bytes. An admitted operation takes one op token of
// each key. The bytes are charged afterwards with Charge.
func (lm *Limiter) Allow(write bool, keys ...Key) bool {
	now := lm.opts.Now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	var bs [4]*bucket
	n := 0
	for _, k := range keys {
		if !k.Limit.Active() {
			continue
		}
		b := lm.get(k.Name, write, k.Limit, now)
		if (b.maxOps > 0 && b.ops < 1) || (b.maxBytes > 0 && b.bytes <= 0) {
			return false
		}
		if n < len(bs) {
			bs[n] = b
			n++
		}
	}
	for _, b := range bs[:n] {
		if b.maxOps > 0 {
			b.ops--
		}
	}
	return true
}

// Charge takes n bytes (received for a write, sent for a read) from every
// active key; the balance may go negative, refusing operations until it
// refills (RGW charges bytes once the request is done, too).
func (lm *Limiter) Charge(write bool, n int64, keys ...Key) {
	if n <= 0 {
		return
	}
	now := lm.opts.Now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	for _, k := range keys {
		if !k.Limit.Active() {
			continue
		}
		if b := lm.get(k.Name, write, k.Limit, now); b.maxBytes > 0 {
			b.bytes -= float64(n)
		}
	}
}
