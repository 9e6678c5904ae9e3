package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// readTopic returns the stored topic, its credentials opened, and its
// object version.
func (s *Service) readTopic(ctx context.Context, oid string) (*topic.Topic, uint64, error) {
	t, ver, err := s.readTopicSealed(ctx, oid)
	if err != nil {
		return nil, 0, err
	}
	if err := s.openTopic(ctx, t); err != nil {
		return nil, 0, err
	}
	return t, ver, nil
}

// readTopicSealed returns the topic as stored.
func (s *Service) readTopicSealed(ctx context.Context, oid string) (*topic.Topic, uint64, error) {
	op := objstore.NewReadOp()
	st := op.Stat()
	rd := op.Read(0, 0)
	err := s.topics.OperateRead(ctx, oid, op)
	if errors.Is(err, objstore.ErrNotFound) || (err == nil && !st.Exists) {
		return nil, 0, fmt.Errorf("%w: %s", ErrTopicNotFound, oid)
	}
	if err != nil {
		return nil, 0, err
	}
	t, err := topic.Decode(rd.Data)
	if err != nil {
		return nil, 0, err
	}
	return t, st.Stat.Version, nil
}

// writeTopic stores t: exclusively when ver is 0, else only over version ver.
// objstore.ErrExists / ErrCanceled report a concurrent change.
func (s *Service) writeTopic(ctx context.Context, t *topic.Topic, ver uint64) error {
	sealed, err := s.sealTopic(ctx, t)
	if err != nil {
		return err
	}
	return s.writeTopicSealed(ctx, sealed, ver)
}

// writeTopicSealed stores t as it is.
func (s *Service) writeTopicSealed(ctx context.Context, t *topic.Topic, ver uint64) error {
	b, err := topic.Encode(t)
	if err != nil {
		return err
	}
	op := objstore.NewWriteOp()
	if ver == 0 {
		op.Create(true)
	} else {
		op.AssertVersion(ver)
	}
	op.WriteFull(b)
	return s.topics.Operate(ctx, queue.Name(t.Tenant, t.Name), op)
}

// Topic references: the methods taking a topic "name" take a bare name
// (the empty tenant's topic) or "<tenant>:<name>" (a tenant's; topic
// names cannot hold ':'), which is also the topic's object name once a
// bare name gets its leading ':' (queue.Name).

// Ref is the reference to topic name of tenant.
func Ref(tenant, name string) string {
	if tenant == "" {
		return name
	}
	return queue.Name(tenant, name)
}

// refOID is the object (and queue) name of topic reference ref.
func refOID(ref string) string {
	if t, n, ok := strings.Cut(ref, ":"); ok {
		return queue.Name(t, n)
	}
	return queue.Name("", ref)
}

// GetTopic returns the topic ref names (see Ref), read from the store.
// ErrTopicNotFound if it does not exist.
func (s *Service) GetTopic(ctx context.Context, ref string) (*topic.Topic, error) {
	t, _, err := s.readTopic(ctx, refOID(ref))
	return t, err
}

// CreateTopicInput is CreateTopic's request.
type CreateTopicInput struct {
	Name     string
	Tenant   string         // the creator's tenant ("" for none): the topic's namespace
	Owner    string         // user creating (or updating) the topic
	Settings topic.Settings // validated with topic.Parse
	// AnyOwner lets an admin update another user's topic.
	AnyOwner bool
}

// CreateTopic creates topic in.Name, or replaces an existing topic's
// attributes (SNS CreateTopic semantics, as RGW). A new topic gets
// NumShards shards, fixed for its life. Switching persistent on or off
// creates or removes the queue. ErrNotOwner when the topic exists and
// belongs to someone else.
func (s *Service) CreateTopic(ctx context.Context, in CreateTopicInput) (*topic.Topic, error) {
	if err := topic.ValidateName(in.Name); err != nil {
		return nil, err
	}
	s.tmu.Lock()
	defer s.tmu.Unlock()
	for attempt := 0; ; attempt++ {
		cur, ver, err := s.readTopic(ctx, queue.Name(in.Tenant, in.Name))
		if errors.Is(err, ErrTopicNotFound) {
			arn := s.ARN(in.Name)
			arn.Tenant = in.Tenant
			t := topic.New(arn, in.Owner, in.Settings, s.opts.NumShards, s.opts.Now())
			if t.Persistent() {
				if err := s.queues.Create(ctx, s.queueName(t), t.NumShards); err != nil {
					return nil, err
				}
			}
			err := s.writeTopic(ctx, t, 0)
			if errors.Is(err, objstore.ErrExists) && attempt < 3 {
				continue // created concurrently elsewhere: update it instead
			}
			if err != nil {
				return nil, err
			}
			s.invalidateTopic(t)
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		if cur.Owner != in.Owner && !in.AnyOwner {
			return nil, ErrNotOwner
		}
		next := *cur
		next.Settings = in.Settings
		t, err := s.replaceTopic(ctx, cur, &next, ver)
		if errors.Is(err, objstore.ErrCanceled) && attempt < 3 {
			continue
		}
		return t, err
	}
}

// SetTopicAttribute changes one attribute (SNS SetTopicAttributes). The
// result is validated as a whole with topic.Set.
func (s *Service) SetTopicAttribute(ctx context.Context, name, owner string, anyOwner bool, attr, value string, opts topic.Options) (*topic.Topic, error) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	for attempt := 0; ; attempt++ {
		cur, ver, err := s.readTopic(ctx, refOID(name))
		if err != nil {
			return nil, err
		}
		if cur.Owner != owner && !anyOwner {
			return nil, ErrNotOwner
		}
		st, err := topic.Set(cur.Settings, attr, value, opts)
		if err != nil {
			return nil, err
		}
		next := *cur
		next.Settings = st
		t, err := s.replaceTopic(ctx, cur, &next, ver)
		if errors.Is(err, objstore.ErrCanceled) && attempt < 3 {
			continue
		}
		return t, err
	}
}

// replaceTopic writes next over cur (at version ver), creating the queue
// before a switch to persistent and removing it after a switch away.
func (s *Service) replaceTopic(ctx context.Context, cur, next *topic.Topic, ver uint64) (*topic.Topic, error) {
	next.UpdatedAt = s.opts.Now().UTC()
	if next.NumShards < 1 {
		next.NumShards = s.opts.NumShards // a record from before shards were stored
	}
	if next.Persistent() && !cur.Persistent() {
		if err := s.queues.Create(ctx, s.queueName(next), next.NumShards); err != nil {
			return nil, err
		}
	}
	if err := s.writeTopic(ctx, next, ver); err != nil {
		return nil, err
	}
	s.invalidateTopic(next)
	if cur.Persistent() && !next.Persistent() {
		if err := s.queues.Delete(ctx, s.queueName(next)); err != nil {
			return nil, fmt.Errorf("service: topic %s is non-persistent now but removing its queue failed (retry SetTopicAttributes): %w", next.Name, err)
		}
	}
	return next, nil
}

// DeleteTopic removes topic name and its queue (undelivered events are
// dropped). Bucket notifications that reference it stay, as in RGW, and
// stop firing. Deleting a missing topic succeeds.
func (s *Service) DeleteTopic(ctx context.Context, name, owner string, anyOwner bool) error {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	oid := refOID(name)
	cur, ver, err := s.readTopic(ctx, oid)
	if errors.Is(err, ErrTopicNotFound) {
		// Still clean up a queue an interrupted delete left behind.
		return s.queues.Delete(ctx, oid)
	}
	if err != nil {
		return err
	}
	if cur.Owner != owner && !anyOwner {
		return ErrNotOwner
	}
	if err := s.queues.Delete(ctx, s.queueName(cur)); err != nil {
		return err
	}
	err = s.topics.Operate(ctx, oid, objstore.NewWriteOp().AssertVersion(ver).Remove())
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	s.invalidateTopic(cur)
	return nil
}

// ListTopics returns up to max topics (max <= 0: 100) after marker, in
// name order, and the marker of the next page ("" on the last).
func (s *Service) ListTopics(ctx context.Context, marker string, max int) ([]*topic.Topic, string, error) {
	if max <= 0 || max > 1000 {
		max = 100
	}
	oids, more, err := s.topics.ListObjects(ctx, marker, max)
	if err != nil {
		return nil, "", err
	}
	out := make([]*topic.Topic, 0, len(oids))
	for _, oid := range oids {
		t, _, err := s.readTopic(ctx, oid)
		if errors.Is(err, ErrTopicNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, "", err
		}
		out = append(out, t)
	}
	next := ""
	if more && len(oids) > 0 {
		next = oids[len(oids)-1]
	}
	return out, next, nil
}

func (s *Service) queueName(t *topic.Topic) string { return queue.Name(t.Tenant, t.Name) }

// TopicStats sums a persistent topic's queue over its shards.
func (s *Service) TopicStats(ctx context.Context, name string) (queue.Stats, error) {
	t, err := s.GetTopic(ctx, name)
	if err != nil {
		return queue.Stats{}, err
	}
	if !t.Persistent() {
		return queue.Stats{}, fmt.Errorf("%w: topic %s is not persistent", objstore.ErrInvalid, name)
	}
	return s.queues.Stats(ctx, s.queueName(t), t.NumShards)
}

// DumpTopic pages through a persistent topic's committed events.
func (s *Service) DumpTopic(ctx context.Context, name, marker string, max int) (queue.DumpPage, error) {
	t, err := s.GetTopic(ctx, name)
	if err != nil {
		return queue.DumpPage{}, err
	}
	if !t.Persistent() {
		return queue.DumpPage{}, fmt.Errorf("%w: topic %s is not persistent", objstore.ErrInvalid, name)
	}
	return s.queues.Dump(ctx, s.queueName(t), t.NumShards, marker, max)
}

// cachedTopic returns the topic for queue name oid through the cache; nil
// when it does not exist.
func (s *Service) cachedTopic(ctx context.Context, oid string) (*topic.Topic, error) {
	now := s.opts.Now()
	s.cmu.Lock()
	e, ok := s.topCache[oid]
	s.cmu.Unlock()
	if ok && now.Before(e.exp) {
		return e.t, nil
	}
	t, _, err := s.readTopic(ctx, oid)
	if errors.Is(err, ErrTopicNotFound) {
		t, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.cmu.Lock()
	s.topCache[oid] = topicEntry{t: t, exp: now.Add(s.opts.CacheTTL)}
	s.cmu.Unlock()
	return t, nil
}

func (s *Service) invalidateTopic(t *topic.Topic) {
	s.cmu.Lock()
	delete(s.topCache, queue.Name(t.Tenant, t.Name))
	s.cmu.Unlock()
}

// Topic returns topic name of tenant, read from the store (it satisfies
// delivery.TopicSource). A missing topic's error matches both
// ErrTopicNotFound and objstore.ErrNotFound.
func (s *Service) Topic(ctx context.Context, tenant, name string) (*topic.Topic, error) {
	t, _, err := s.readTopic(ctx, queue.Name(tenant, name))
	if errors.Is(err, ErrTopicNotFound) {
		return nil, fmt.Errorf("%w (%w)", err, objstore.ErrNotFound)
	}
	return t, err
}
