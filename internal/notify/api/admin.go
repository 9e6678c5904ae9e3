package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// The admin handlers have s3api.AdminHandlerFunc's shape; the server has
// checked that the caller is an admin.

// adminTopic is a topic as `cairn admin topic get|list` prints it; secrets
// are redacted.
type adminTopic struct {
	Name       string            `json:"name"`
	Tenant     string            `json:"tenant"`
	ARN        string            `json:"arn"`
	Owner      string            `json:"owner"`
	Persistent bool              `json:"persistent"`
	NumShards  int               `json:"num_shards"`
	Attributes map[string]string `json:"attributes"`
	Created    time.Time         `json:"created"`
	Updated    time.Time         `json:"updated"`
	// SubscribedBuckets are the buckets whose notifications name the
	// topic, as radosgw-admin topic get/list print them.
	SubscribedBuckets []string `json:"subscribed_buckets"`
}

func toAdmin(t *topic.Topic, subs map[string][]string) adminTopic {
	bs := subs[t.ARN]
	if bs == nil {
		bs = []string{}
	}
	return adminTopic{Name: t.Name, Tenant: t.Tenant, ARN: t.ARN, Owner: t.Owner, Persistent: t.Persistent(), NumShards: t.NumShards,
		Attributes: t.Settings.Attributes(false), Created: t.CreatedAt, Updated: t.UpdatedAt, SubscribedBuckets: bs}
}

func intParam(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, s3err.New(s3err.ErrInvalidArgument, "%s must be a non-negative integer", name)
	}
	return n, nil
}

// AdminTopic serves /admin/topic.
func (a *API) AdminTopic(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ctx := r.Context()
	name := q.Get("topic")
	if r.Method == http.MethodDelete {
		if name == "" {
			return s3err.New(s3err.ErrInvalidArgument, "topic is required")
		}
		if _, err := a.svc.GetTopic(ctx, name); err != nil {
			return s3Error(err)
		}
		if err := a.svc.DeleteTopic(ctx, name, "", true); err != nil {
			return s3Error(err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if r.Method != http.MethodGet {
		return s3err.New(s3err.ErrMethodNotAllowed, "")
	}
	max, err := intParam(r, "max-entries")
	if err != nil {
		return err
	}
	if q.Has("list") || name == "" {
		ts, next, err := a.svc.ListTopics(ctx, q.Get("marker"), max)
		if err != nil {
			return s3Error(err)
		}
		out := struct {
			Topics []adminTopic `json:"topics"`
			Next   string       `json:"next_marker,omitempty"`
		}{Topics: []adminTopic{}, Next: next}
		subs, err := a.svc.SubscribedBuckets(ctx)
		if err != nil {
			return s3Error(err)
		}
		for _, t := range ts {
			if q.Has("tenant") && t.Tenant != q.Get("tenant") {
				continue // radosgw-admin topic list --tenant T
			}
			out.Topics = append(out.Topics, toAdmin(t, subs))
		}
		return writeJSON(w, http.StatusOK, out)
	}
	switch {
	case q.Has("stats"):
		st, err := a.svc.TopicStats(ctx, name)
		if err != nil {
			return s3Error(err)
		}
		return writeJSON(w, http.StatusOK, st)
	case q.Has("dump"):
		p, err := a.svc.DumpTopic(ctx, name, q.Get("marker"), max)
		if err != nil {
			return s3Error(err)
		}
		type entry struct {
			Marker      string          `json:"marker"`
			Shard       int             `json:"shard"`
			Committed   time.Time       `json:"committed"`
			Retries     uint32          `json:"retries"`
			NextAttempt time.Time       `json:"next_attempt,omitzero"`
			Event       json.RawMessage `json:"event,omitempty"`
			Raw         []byte          `json:"raw,omitempty"` // not JSON: base64
		}
		out := struct {
			Entries   []entry `json:"entries"`
			Next      string  `json:"next_marker,omitempty"`
			Truncated bool    `json:"truncated"`
		}{Entries: []entry{}, Next: p.Next, Truncated: p.Truncated}
		for _, e := range p.Entries {
			en := entry{Marker: e.Marker, Shard: e.Shard, Committed: e.Committed, Retries: e.Retries, NextAttempt: e.NextAttempt}
			if json.Valid(e.Data) {
				en.Event = e.Data
			} else {
				en.Raw = e.Data
			}
			out.Entries = append(out.Entries, en)
		}
		return writeJSON(w, http.StatusOK, out)
	default: // get
		t, err := a.svc.GetTopic(ctx, name)
		if err != nil {
			return s3Error(err)
		}
		subs, err := a.svc.SubscribedBuckets(ctx)
		if err != nil {
			return s3Error(err)
		}
		return writeJSON(w, http.StatusOK, toAdmin(t, subs))
	}
}

// adminNotification is one configuration as the admin API prints it.
type adminNotification struct {
	ID       string        `json:"id"`
	TopicARN string        `json:"topic_arn"`
	Events   []string      `json:"events"`
	Filter   config.Filter `json:"filter"`
}

func toAdminNotif(tc *config.TopicConfiguration) adminNotification {
	n := adminNotification{ID: tc.ID, TopicARN: tc.TopicARN, Filter: tc.Filter}
	for _, e := range tc.Events {
		n.Events = append(n.Events, string(e))
	}
	return n
}

// AdminNotification serves /admin/notification.
func (a *API) AdminNotification(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ctx := r.Context()
	if a.opts.Bucket == nil {
		return s3err.New(s3err.ErrNotImplemented, "no bucket lookup configured")
	}
	bname := q.Get("bucket")
	if bname == "" {
		return s3err.New(s3err.ErrInvalidArgument, "bucket is required")
	}
	b, err := a.opts.Bucket(ctx, bname)
	if err != nil {
		return err // driver errors: the server maps NoSuchBucket
	}
	id := q.Get("notification-id")
	switch r.Method {
	case http.MethodDelete:
		if err := a.svc.DeleteBucketNotification(ctx, b, id); err != nil {
			return s3Error(err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	case http.MethodGet:
	default:
		return s3err.New(s3err.ErrMethodNotAllowed, "")
	}
	c, err := a.svc.GetBucketNotification(ctx, b)
	if err != nil {
		return s3Error(err)
	}
	if q.Has("get") || id != "" {
		tc := c.Get(id)
		if tc == nil {
			return s3err.New(s3err.ErrNoSuchConfiguration, "No notification %q on bucket %s.", id, b.Name)
		}
		return writeJSON(w, http.StatusOK, toAdminNotif(tc))
	}
	out := []adminNotification{}
	for _, tc := range c.Topics {
		out = append(out, toAdminNotif(tc))
	}
	return writeJSON(w, http.StatusOK, out)
}
