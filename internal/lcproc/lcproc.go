// Package lcproc applies bucket lifecycle configurations through the
// driver: it is the lifecycle.Worker's Processor. Every expiry goes through
// the driver's normal delete paths, so object lock, delete markers and the
// persistent notification path (with RGW's lifecycle event names) apply as
// for a client's delete.
package lcproc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/lifecycle"
)

// Processor implements lifecycle.Processor on a driver.
type Processor struct {
	Driver *driver.Driver
	// Day is the lifecycle day (the worker's; lc-debug-interval).
	Day time.Duration
	// Page is the listing page size (default 1000).
	Page int
	// Workers is how many keys are decided and expired at once (default
	// 4); the worker's Rate paces the total.
	Workers int
	// TransitionRate bounds the bytes per second transitions copy (all
	// workers together; lc-transition-rate); 0 = unlimited. Copying is
	// what a transition costs the foreground: the examination pace
	// (lc-rate) does not see object sizes.
	TransitionRate int64
	// BusyRate, when > 0, replaces TransitionRate while Busy reports
	// foreground requests in flight (lc-transition-busy-rate): a gateway
	// that serves clients moves data slower than an idle one.
	BusyRate int64
	Busy     func() bool
	Logger   *slog.Logger
	Now      func() time.Time

	pace pacer
}

// pacer spaces transitions so that they copy at most rate bytes a second.
type pacer struct {
	mu   sync.Mutex
	next time.Time
}

// wait reserves n bytes at rate and sleeps until the reservation starts.
func (p *pacer) wait(ctx context.Context, rate, n int64) error {
	if rate <= 0 {
		return nil
	}
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
	p.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

var _ lifecycle.Processor = (*Processor)(nil)

// transitionRate is the pace for the next transition's bytes.
func (p *Processor) transitionRate() int64 {
	if p.BusyRate > 0 && p.Busy != nil && p.Busy() {
		return p.BusyRate
	}
	return p.TransitionRate
}

func (p *Processor) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// ProcessBucket examines every version under the enabled rules' prefixes
// after marker, key by key (a key's versions are decided together, and
// the checkpoint is always a key boundary), then the bucket's incomplete
// multipart uploads. Decisions are recomputed from the index on a resumed
// pass, so nothing is expired twice: a removed version is gone, and a
// current version expired into a delete marker is then noncurrent since
// the marker's time.
func (p *Processor) ProcessBucket(ctx context.Context, bucket, marker string, prog *lifecycle.Progress) error {
	doc, err := p.Driver.GetBucketLifecycle(ctx, bucket)
	if errors.Is(err, driver.ErrNoSuchLifecycle) || errors.Is(err, driver.ErrNoSuchBucket) {
		return nil // removed since registered: nothing to apply
	}
	if err != nil {
		return err
	}
	cfg, err := lifecycle.Parse(doc)
	if err != nil {
		return err
	}
	state, err := p.Driver.GetBucketVersioning(ctx, bucket)
	if err != nil {
		return err
	}
	now := p.now()
	for _, prefix := range disjoint(cfg.Prefixes()) {
		if err := p.versions(ctx, bucket, prefix, marker, state, cfg, now, prog); err != nil {
			return err
		}
	}
	return p.uploads(ctx, bucket, cfg, now, prog)
}

// disjoint sorts prefixes and drops those inside another.
func disjoint(ps []string) []string {
	sort.Strings(ps)
	var out []string
	for _, p := range ps {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func (p *Processor) versions(ctx context.Context, bucket, prefix, marker, state string, cfg *lifecycle.Configuration, now time.Time, prog *lifecycle.Progress) error {
	page := p.Page
	if page <= 0 {
		page = 1000
	}
	workers := p.Workers
	if workers <= 0 {
		workers = 4
	}
	in := driver.ListVersionsInput{Bucket: bucket, Prefix: prefix, KeyMarker: marker, MaxKeys: page}
	var cur []driver.ObjectInfo // the key being gathered (pages may split it)
	var batch [][]driver.ObjectInfo
	// run decides a batch of whole keys in parallel, then reports them in
	// key order: the checkpoint never passes a key still being worked on.
	run := func() error {
		if len(batch) == 0 {
			return nil
		}
		type outcome struct {
			keyOutcome
			err error
		}
		out := make([]outcome, len(batch))
		sem := make(chan struct{}, workers)
		var wg sync.WaitGroup
		for i, vs := range batch {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				o := &out[i]
				o.keyOutcome, o.err = p.key(ctx, bucket, state, vs, cfg, now)
			}()
		}
		wg.Wait()
		n := 0
		for i, o := range out {
			if o.err != nil {
				return o.err
			}
			for range o.expired {
				prog.Expired()
			}
			for range o.locked {
				prog.Locked()
			}
			for _, b := range o.moved {
				prog.Transitioned(b)
			}
			n += len(batch[i])
		}
		last := batch[len(batch)-1][0].Key
		batch = batch[:0]
		return prog.Examined(n, last)
	}
	push := func() error {
		if len(cur) > 0 {
			batch = append(batch, cur)
			cur = nil
		}
		if len(batch) >= 16*workers {
			return run()
		}
		return nil
	}
	for {
		res, err := p.Driver.ListObjectVersions(ctx, in)
		if err != nil {
			return err
		}
		for _, v := range res.Versions {
			if len(cur) > 0 && cur[0].Key != v.Key {
				if err := push(); err != nil {
					return err
				}
			}
			cur = append(cur, v)
		}
		if !res.IsTruncated {
			if err := push(); err != nil {
				return err
			}
			return run()
		}
		in.KeyMarker, in.VersionIDMarker = res.NextKeyMarker, res.NextVersionIDMarker
	}
}

// keyOutcome is what the rules did to one key's versions.
type keyOutcome struct {
	expired, locked int
	moved           []int64 // bytes copied per version transitioned
}

// key decides and applies the rules to one key's versions (newest first).
func (p *Processor) key(ctx context.Context, bucket, state string, vs []driver.ObjectInfo, cfg *lifecycle.Configuration, now time.Time) (out keyOutcome, err error) {
	for i, v := range vs {
		lv := lifecycle.Version{
			Key: v.Key, Size: v.Size, ModTime: v.ModTime, Tags: v.Meta.Tags,
			IsLatest: i == 0, DeleteMarker: v.DeleteMarker, OnlyVersion: len(vs) == 1,
			StorageClass: v.StorageClass,
		}
		if i > 0 {
			lv.NoncurrentSince = vs[i-1].ModTime
			lv.NewerNoncurrent = i - 1
		}
		dec := cfg.Evaluate(lv, now, p.Day)
		if dec.Action == lifecycle.None {
			continue
		}
		if dec.Action == lifecycle.TransitionCurrent || dec.Action == lifecycle.TransitionNoncurrent {
			if err := p.pace.wait(ctx, p.transitionRate(), v.Size); err != nil {
				return out, err
			}
			// Only if it is still the version decided on: the index
			// switch is guarded by its write tag, this by what was listed.
			res, err := p.Driver.TransitionObject(expiryContext(ctx, bucket, v), driver.TransitionInput{
				Bucket: bucket, Key: v.Key, VersionID: v.VersionID, StorageClass: dec.StorageClass,
				IfETag: v.ETag, IfModTime: v.ModTime, EventNames: dec.Action.EventNames(),
			})
			switch {
			case errors.Is(err, driver.ErrPreconditionFailed), errors.Is(err, driver.ErrNoSuchKey), errors.Is(err, driver.ErrNoSuchVersion):
				continue // changed since listed: decided again next pass
			case errors.Is(err, driver.ErrInvalidStorageClass):
				// A class removed from the configuration: the rest of
				// the pass goes on.
				p.logger().Warn("lifecycle: transition to an unconfigured storage class", "bucket", bucket, "class", dec.StorageClass)
				continue
			case err != nil:
				return out, err
			}
			if res.Moved {
				out.moved = append(out.moved, res.Bytes)
			}
			continue
		}
		in := driver.DeleteObjectInput{Bucket: bucket, Key: v.Key, EventName: dec.Action.EventName(), EventFirst: true}
		switch dec.Action {
		case lifecycle.ExpireCurrent:
			// Only if it is still the version decided on: a PUT since the
			// listing makes a new current object that is not due.
			in.IfMatch = v.ETag
		default:
			if p.Driver.Locked(v.Meta) {
				p.logger().Debug("lifecycle: locked version kept", "bucket", bucket, "key", v.Key, "version", v.VersionID)
				out.locked++
				continue
			}
			in.VersionID = v.VersionID
			if in.VersionID == "" {
				in.VersionID = "null"
			}
		}
		_, err := p.Driver.DeleteObjectVersion(expiryContext(ctx, bucket, v), in)
		switch {
		case errors.Is(err, driver.ErrPreconditionFailed):
			continue // changed since listed: decided again next pass
		case err != nil:
			return out, err
		}
		out.expired++
	}
	return out, nil
}

func (p *Processor) uploads(ctx context.Context, bucket string, cfg *lifecycle.Configuration, now time.Time, prog *lifecycle.Progress) error {
	in := driver.ListUploadsInput{Bucket: bucket, MaxUploads: 1000}
	for {
		res, err := p.Driver.ListMultipartUploads(ctx, in)
		if err != nil {
			return err
		}
		for _, u := range res.Uploads {
			if _, ok := cfg.AbortUpload(u.Key, u.Initiated, now, p.Day); !ok {
				continue
			}
			err := p.Driver.AbortMultipartUploadEvent(ctx, bucket, u.Key, u.UploadID, lifecycle.AbortEventName)
			if err != nil && !errors.Is(err, driver.ErrNoSuchUpload) {
				return err
			}
			if err == nil {
				prog.Expired()
			}
		}
		if !res.IsTruncated {
			return nil
		}
		in.KeyMarker, in.UploadIDMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

// expiryContext names the expiry of v with a request id derived from the
// version, so an event emitted again after a crash (see
// driver.DeleteObjectInput.EventFirst) carries the same
// x-amz-request-id as the first: consumers can drop the repeat.
func expiryContext(ctx context.Context, bucket string, v driver.ObjectInfo) context.Context {
	h := sha256.Sum256([]byte(bucket + "\x00" + v.Key + "\x00" + v.VersionID + "\x00" + v.ETag + "\x00" + v.ModTime.UTC().Format(time.RFC3339Nano)))
	return driver.WithRequest(ctx, driver.RequestMeta{RequestID: "lc-" + hex.EncodeToString(h[:12]), Principal: "rgw-lifecycle"})
}

func (p *Processor) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}
