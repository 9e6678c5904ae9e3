package topic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/cairn-s3/cairn/internal/kms/secret"
	"time"
)

// FormatVersion is the version of Topic's JSON encoding.
const FormatVersion = 1

// Topic is the stored definition of a topic.
type Topic struct {
	Version int    `json:"v"`
	Name    string `json:"name"`
	Tenant  string `json:"tenant"`
	ARN     string `json:"arn"`
	Owner   string `json:"owner"` // user id of the creator
	// NumShards is the number of queue shards of a persistent topic, read
	// from the notif-shards option when the topic is created and fixed
	// afterwards (so an event's shard never moves).
	NumShards int       `json:"num_shards"`
	Settings  Settings  `json:"settings"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Sealed holds the credentials (Settings.PushEndpoint as given and
	// Settings.Password) sealed at rest when a KMS seals secrets; the
	// stored PushEndpoint is then the redacted URL and Password empty.
	// The service opens it on read: callers never see it set.
	Sealed *secret.Box `json:"sealed,omitempty"`
}

// New builds a topic record after the name and settings were validated.
func New(a ARN, owner string, s Settings, numShards int, now time.Time) *Topic {
	now = now.UTC()
	return &Topic{
		Version: FormatVersion, Name: a.Name, Tenant: a.Tenant, ARN: a.String(), Owner: owner,
		NumShards: numShards, Settings: s, CreatedAt: now, UpdatedAt: now,
	}
}

// Persistent reports whether events go through the topic's queue.
func (t *Topic) Persistent() bool { return t.Settings.Persistent }

// Encode renders t as JSON for storage. Field order and names are fixed.
func Encode(t *Topic) ([]byte, error) { return json.Marshal(t) }

// Decode reads what Encode wrote. Unknown fields are an error, as is a
// newer format version.
func Decode(b []byte) (*Topic, error) {
	var t Topic
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("topic: decode: %w", err)
	}
	if t.Version < 1 || t.Version > FormatVersion {
		return nil, fmt.Errorf("topic: unsupported format version %d", t.Version)
	}
	return &t, nil
}
