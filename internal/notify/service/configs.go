package service

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// configOID names a bucket's configuration object: "<bucket>:<bucket id>".
// Bucket names contain no ':'.
func configOID(b driver.BucketInfo) string { return b.Name + ":" + b.ID }

func (s *Service) readConfig(ctx context.Context, b driver.BucketInfo) (*config.Configuration, uint64, error) {
	op := objstore.NewReadOp()
	st := op.Stat()
	rd := op.Read(0, 0)
	err := s.confs.OperateRead(ctx, configOID(b), op)
	if errors.Is(err, objstore.ErrNotFound) || (err == nil && !st.Exists) {
		return &config.Configuration{}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	c, err := config.Decode(rd.Data)
	if err != nil {
		return nil, 0, err
	}
	return c, st.Stat.Version, nil
}

// GetBucketNotification returns bucket b's configuration (empty when it
// has none).
func (s *Service) GetBucketNotification(ctx context.Context, b driver.BucketInfo) (*config.Configuration, error) {
	c, _, err := s.readConfig(ctx, b)
	return c, err
}

// PutBucketNotification sets b's configuration from c (validated by
// config.Parse): in config.ModeAWS c replaces it, in config.ModeRGW c's
// configurations are added or replace those with the same Id. Every topic
// ARN must name an existing topic; otherwise a *config.Error
// (InvalidArgument) is returned and nothing changes. An empty c removes
// the configuration in both modes.
func (s *Service) PutBucketNotification(ctx context.Context, b driver.BucketInfo, c *config.Configuration) error {
	for _, tc := range c.Topics {
		a, err := topic.ParseARN(tc.TopicARN)
		if err != nil {
			return &config.Error{Code: config.CodeInvalidArgument, Message: err.Error()}
		}
		if _, _, err := s.readTopic(ctx, queue.Name(a.Tenant, a.Name)); errors.Is(err, ErrTopicNotFound) {
			return &config.Error{Code: config.CodeInvalidArgument,
				Message: fmt.Sprintf("notification %q: topic %s does not exist; create it first", tc.ID, tc.TopicARN)}
		} else if err != nil {
			return err
		}
	}
	defer s.invalidateConfig(b)
	if len(c.Topics) == 0 {
		return s.removeConfig(ctx, b)
	}
	if s.opts.ConfigMode == config.ModeRGW {
		return s.mergeConfig(ctx, b, c)
	}
	data, err := config.Encode(c)
	if err != nil {
		return err
	}
	return s.confs.Operate(ctx, configOID(b), objstore.NewWriteOp().WriteFull(data))
}

// mergeConfig adds c to b's stored configuration as one guarded
// read-modify-write, redone when another request changed it meanwhile.
func (s *Service) mergeConfig(ctx context.Context, b driver.BucketInfo, c *config.Configuration) error {
	for attempt := 0; ; attempt++ {
		cur, ver, err := s.readConfig(ctx, b)
		if err != nil {
			return err
		}
		if err := cur.Merge(c); err != nil {
			return err
		}
		data, err := config.Encode(cur)
		if err != nil {
			return err
		}
		op := objstore.NewWriteOp()
		if ver == 0 {
			op.Create(true) // none yet: fail if another request made one
		} else {
			op.AssertVersion(ver)
		}
		err = s.confs.Operate(ctx, configOID(b), op.WriteFull(data))
		if (errors.Is(err, objstore.ErrCanceled) || errors.Is(err, objstore.ErrExists)) && attempt < 5 {
			continue
		}
		return err
	}
}

// DeleteBucketNotification removes b's notification id, or all of them
// when id is "". ErrNoSuchNotification when id is not configured.
func (s *Service) DeleteBucketNotification(ctx context.Context, b driver.BucketInfo, id string) error {
	defer s.invalidateConfig(b)
	if id == "" {
		return s.removeConfig(ctx, b)
	}
	for attempt := 0; ; attempt++ {
		c, ver, err := s.readConfig(ctx, b)
		if err != nil {
			return err
		}
		if !c.Remove(id) {
			return fmt.Errorf("%w: %q on bucket %s", ErrNoSuchNotification, id, b.Name)
		}
		op := objstore.NewWriteOp().AssertVersion(ver)
		if len(c.Topics) == 0 {
			op.Remove()
		} else {
			data, err := config.Encode(c)
			if err != nil {
				return err
			}
			op.WriteFull(data)
		}
		err = s.confs.Operate(ctx, configOID(b), op)
		if errors.Is(err, objstore.ErrCanceled) && attempt < 5 {
			continue // changed concurrently: redo on the new version
		}
		return err
	}
}

// RemoveBucket drops b's configuration; the driver's DeleteBucket should
// call it (otherwise the record lingers, harmless: it is keyed by the
// bucket instance id).
func (s *Service) RemoveBucket(ctx context.Context, b driver.BucketInfo) error {
	defer s.invalidateConfig(b)
	return s.removeConfig(ctx, b)
}

func (s *Service) removeConfig(ctx context.Context, b driver.BucketInfo) error {
	err := s.confs.Operate(ctx, configOID(b), objstore.NewWriteOp().Remove())
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

// cachedConfig returns b's configuration through the cache; nil when the
// bucket has none (the common case, so it is cached too).
func (s *Service) cachedConfig(ctx context.Context, b driver.BucketInfo) (*config.Configuration, error) {
	now := s.opts.Now()
	s.cmu.Lock()
	e, ok := s.cfgCache[b.ID]
	s.cmu.Unlock()
	if ok && now.Before(e.exp) {
		return e.cfg, nil
	}
	c, _, err := s.readConfig(ctx, b)
	if err != nil {
		return nil, err
	}
	if len(c.Topics) == 0 {
		c = nil
	}
	s.cmu.Lock()
	s.cfgCache[b.ID] = cfgEntry{cfg: c, exp: now.Add(s.opts.CacheTTL)}
	s.cmu.Unlock()
	return c, nil
}

func (s *Service) invalidateConfig(b driver.BucketInfo) {
	s.cmu.Lock()
	delete(s.cfgCache, b.ID)
	s.cmu.Unlock()
}

// SubscribedBuckets maps each topic ARN to the names of the buckets whose
// notification configurations name it, sorted (radosgw-admin's
// "subscribed_buckets"). It reads every stored configuration: an admin
// read, not for request paths.
func (s *Service) SubscribedBuckets(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	marker := ""
	for {
		oids, more, err := s.confs.ListObjects(ctx, marker, 1000)
		if err != nil {
			return nil, err
		}
		for _, oid := range oids {
			name, id, ok := strings.Cut(oid, ":")
			if !ok {
				continue
			}
			c, _, err := s.readConfig(ctx, driver.BucketInfo{Name: name, ID: id})
			if err != nil {
				return nil, fmt.Errorf("notification configuration of bucket %s: %w", name, err)
			}
			seen := map[string]bool{}
			for _, tc := range c.Topics {
				if !seen[tc.TopicARN] {
					seen[tc.TopicARN] = true
					out[tc.TopicARN] = append(out[tc.TopicARN], name)
				}
			}
		}
		if !more || len(oids) == 0 {
			break
		}
		marker = oids[len(oids)-1]
	}
	for _, bs := range out {
		sort.Strings(bs)
	}
	return out, nil
}
