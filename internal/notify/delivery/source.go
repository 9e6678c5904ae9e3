package delivery

import (
	"context"
	"errors"
	"strings"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/notify/push"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// Registry lists the registered persistent-topic queues, page by page, in
// name order. *queue.Queues (internal/notify/queue) satisfies it.
type Registry interface {
	// List returns up to max queues after marker and whether more remain;
	// the next marker is the last returned name.
	List(ctx context.Context, marker string, max int) ([]nq.Info, bool, error)
}

// CommitNotifier is implemented by a Registry that reports local commits
// (*queue.Queues): the manager then wakes a shard's worker on commit.
type CommitNotifier interface {
	OnCommit(fn func(oid string))
}

// StatsBounder is implemented by a Registry whose queue stats can use the
// owner's bound (*queue.Queues): the manager gives it, per shard it owns,
// the marker up to which every entry is gone (queue.GetStatsAfter).
type StatsBounder interface {
	SetStatsBound(fn func(oid string) clsq.Marker)
}

// Shard is one queue shard object of a persistent topic.
type Shard struct {
	// Queue is the queue name "<tenant>:<topic>" (the registry key).
	Queue string
	// Index is the shard number; OID the object name in Config.IO
	// (queue.ShardOID(Queue, Index)).
	Index int
	OID   string
}

// TopicName splits the queue name into tenant and topic name.
func (s Shard) TopicName() (tenant, name string) {
	tenant, name, _ = strings.Cut(s.Queue, ":")
	return tenant, name
}

// ErrTopicNotFound is what TopicSource returns (or wraps) for a topic that
// does not exist. objstore.ErrNotFound is accepted too.
var ErrTopicNotFound = errors.New("delivery: topic not found")

// TopicSource returns stored topic definitions. Safe for concurrent use.
type TopicSource interface {
	// Topic returns the topic, or an error matching ErrTopicNotFound or
	// objstore.ErrNotFound when it does not exist. The manager does not
	// modify the result.
	Topic(ctx context.Context, tenant, name string) (*topic.Topic, error)
}

// Endpoints turns a topic into a connected endpoint (the endpoint factory).
// The manager calls it when it starts delivering a shard, when the topic's
// settings change, and again (with backoff) after a failure; never once per
// push. Failures do not count against entries' retries: no push happened.
//
// The factory owns what it returns: it may share one endpoint between
// callers, and it closes endpoints (the manager never calls Close). The
// manager bounds in-flight pushes per endpoint URL itself, so the factory
// need not wrap endpoints in push.Limit.
type Endpoints interface {
	Endpoint(ctx context.Context, t *topic.Topic) (push.Endpoint, error)
}

// EndpointsFunc adapts a function to Endpoints.
type EndpointsFunc func(ctx context.Context, t *topic.Topic) (push.Endpoint, error)

// Endpoint calls f.
func (f EndpointsFunc) Endpoint(ctx context.Context, t *topic.Topic) (push.Endpoint, error) {
	return f(ctx, t)
}

// TopicsFunc adapts a function to TopicSource.
type TopicsFunc func(ctx context.Context, tenant, name string) (*topic.Topic, error)

// Topic calls f.
func (f TopicsFunc) Topic(ctx context.Context, tenant, name string) (*topic.Topic, error) {
	return f(ctx, tenant, name)
}
