package event

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

const (
	// Version is the eventVersion RGW sends ("2.2": AWS's 2.1 structure
	// plus RGW's bucket id, metadata, tags, eventId and opaqueData).
	Version = "2.2"
	// SchemaVersion is the value of s3.s3SchemaVersion.
	SchemaVersion = "1.0"
	// DefaultSource is the eventSource when the producer sets none: RGW's
	// "ceph:s3", because consumers written for RGW match on it (and build
	// the CloudEvents source from it). The gateway option
	// notif-event-source changes it.
	DefaultSource = "ceph:s3"
)

// Record is one event. Field names and nesting are AWS's; the JSON is what
// endpoints receive, wrapped as {"Records":[record]}.
type Record struct {
	EventVersion      string            `json:"eventVersion"`
	EventSource       string            `json:"eventSource"`
	AWSRegion         string            `json:"awsRegion"`
	EventTime         Time              `json:"eventTime"`
	EventName         string            `json:"eventName"`
	UserIdentity      Identity          `json:"userIdentity"`
	RequestParameters RequestParameters `json:"requestParameters"`
	ResponseElements  ResponseElements  `json:"responseElements"`
	S3                S3                `json:"s3"`
	EventID           string            `json:"eventId"`
	OpaqueData        string            `json:"opaqueData"`
}

// Identity names a user (userIdentity, ownerIdentity).
type Identity struct {
	PrincipalID string `json:"principalId"`
}

// RequestParameters of the request that caused the event.
type RequestParameters struct {
	SourceIPAddress string `json:"sourceIPAddress"`
}

// ResponseElements are the response headers that identify the request.
type ResponseElements struct {
	RequestID string `json:"x-amz-request-id"`
	HostID    string `json:"x-amz-id-2"`
}

// S3 is the record's "s3" member.
type S3 struct {
	SchemaVersion   string `json:"s3SchemaVersion"`
	ConfigurationID string `json:"configurationId"`
	Bucket          Bucket `json:"bucket"`
	Object          Object `json:"object"`
}

// Bucket describes the bucket; ID is RGW's extension (the bucket instance id).
type Bucket struct {
	Name          string   `json:"name"`
	OwnerIdentity Identity `json:"ownerIdentity"`
	ARN           string   `json:"arn"`
	ID            string   `json:"id"`
}

// Object describes the object. Key is URL-encoded as AWS does (see
// EncodeKey). Metadata and Tags are RGW's extensions, as lists of
// {"key","val"} pairs sorted by key.
type Object struct {
	Key       string `json:"key"`
	Size      int64  `json:"size"`
	ETag      string `json:"eTag"`
	VersionID string `json:"versionId"`
	Sequencer string `json:"sequencer"`
	Metadata  []KV   `json:"metadata"`
	Tags      []KV   `json:"tags"`
}

// KV is one metadata entry or tag.
type KV struct {
	Key string `json:"key"`
	Val string `json:"val"`
}

// Time is a UTC timestamp rendered as RFC 3339 with milliseconds
// ("2006-01-02T15:04:05.000Z"), the form AWS uses.
type Time struct{ time.Time }

const timeLayout = "2006-01-02T15:04:05.000Z"

// TimeLayout is eventTime's format (milliseconds, as RGW and AWS write
// it); CloudEvents' ce-time uses it too, so both carry the same value.
const TimeLayout = timeLayout

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(timeLayout) + `"`), nil
}

// UnmarshalJSON accepts any RFC 3339 time (RGW sends microseconds).
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("event: bad eventTime %q: %w", s, err)
	}
	t.Time = v.UTC()
	return nil
}

// Params are what a producer knows about one event. One Params yields one
// record per matching configuration (see New and ForConfiguration).
type Params struct {
	Type     Type      // concrete event type, e.g. ObjectCreatedPut
	Time     time.Time // when the operation completed
	Source   string    // eventSource; DefaultSource when empty
	Region   string    // zonegroup name, used as awsRegion
	User     string    // principal that made the request
	SourceIP string
	// RequestID and HostID are the x-amz-request-id / x-amz-id-2 response
	// headers of the request.
	RequestID, HostID string

	Tenant      string // bucket tenant ("" for none); part of the bucket ARN
	Bucket      string
	BucketOwner string
	BucketID    string

	Key       string // raw object key; encoded by New
	Size      int64
	ETag      string // without quotes
	VersionID string
	Sequencer uint64 // see Clock
	Metadata  map[string]string
	Tags      map[string]string

	// EventID identifies the event for receivers' de-duplication; a
	// random one is generated when empty. Redeliveries carry the stored
	// record, so a duplicate has the same eventId.
	EventID string
}

// New builds a record without configuration id and opaque data; use
// ForConfiguration for each matching configuration.
func New(p Params) *Record {
	src := p.Source
	if src == "" {
		src = DefaultSource
	}
	id := p.EventID
	if id == "" {
		id = NewEventID()
	}
	return &Record{
		EventVersion:      Version,
		EventSource:       src,
		AWSRegion:         p.Region,
		EventTime:         Time{p.Time.UTC()},
		EventName:         p.Type.Name(),
		UserIdentity:      Identity{p.User},
		RequestParameters: RequestParameters{p.SourceIP},
		ResponseElements:  ResponseElements{RequestID: p.RequestID, HostID: p.HostID},
		S3: S3{
			SchemaVersion: SchemaVersion,
			Bucket: Bucket{
				Name:          p.Bucket,
				OwnerIdentity: Identity{p.BucketOwner},
				ARN:           BucketARN(p.Region, p.Tenant, p.Bucket),
				ID:            p.BucketID,
			},
			Object: Object{
				Key:       EncodeKey(p.Key),
				Size:      p.Size,
				ETag:      strings.Trim(p.ETag, `"`),
				VersionID: p.VersionID,
				Sequencer: FormatSequencer(p.Sequencer),
				Metadata:  sortedKV(p.Metadata),
				Tags:      sortedKV(p.Tags),
			},
		},
		EventID: id,
	}
}

// ForConfiguration returns a copy of r for one notification configuration
// and its topic's opaque data. The copy shares no mutable memory with r.
func (r *Record) ForConfiguration(configurationID, opaqueData string) *Record {
	c := *r
	c.S3.Object.Metadata = append([]KV(nil), r.S3.Object.Metadata...)
	c.S3.Object.Tags = append([]KV(nil), r.S3.Object.Tags...)
	c.S3.ConfigurationID = configurationID
	c.OpaqueData = opaqueData
	return &c
}

// Type returns the record's event type with the "s3:" prefix.
func (r *Record) Type() Type { return Type("s3:" + r.EventName) }

// ObjectKey returns the decoded object key (the raw key).
func (r *Record) ObjectKey() string { return objectKey(r.S3.Object.Key) }

func objectKey(enc string) string {
	k, err := DecodeKey(enc)
	if err != nil {
		return enc
	}
	return k
}

// BucketARN is RGW's bucket ARN: arn:aws:s3:<zonegroup>:<tenant>:<bucket>.
func BucketARN(region, tenant, bucket string) string {
	return "arn:aws:s3:" + region + ":" + tenant + ":" + bucket
}

// NewEventID returns 32 random hex digits.
func NewEventID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	var h [32]byte
	hex.Encode(h[:], b[:])
	return string(h[:])
}

func sortedKV(m map[string]string) []KV {
	if len(m) == 0 {
		return []KV{} // no allocation (sort.Slice would box it: two)
	}
	out := make([]KV, 0, len(m))
	for k, v := range m {
		out = append(out, KV{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// EncodeKey URL-encodes an object key the way AWS does in event records:
// form encoding (space becomes '+', '=' becomes "%3D") with '/' left as is.
func EncodeKey(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}

// DecodeKey reverses EncodeKey.
func DecodeKey(s string) (string, error) { return url.QueryUnescape(s) }

// Marshal encodes one record as compact JSON, the form queues store (what
// encoding/json gives; see AppendJSON). The error is always nil.
func Marshal(r *Record) ([]byte, error) { return AppendJSON(make([]byte, 0, 1024), r), nil }

var errNoVersionOrName = errors.New("event: record without eventVersion or eventName")

// Unmarshal decodes what Marshal produced. Unknown fields are rejected so
// a corrupt or foreign entry is noticed rather than half-read.
func Unmarshal(b []byte) (*Record, error) {
	if r, err := decodeCanonical(b); err == nil {
		if r.EventVersion == "" || r.EventName == "" {
			return nil, errNoVersionOrName
		}
		return r, nil
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("event: decode record: %w", err)
	}
	if dec.More() {
		return nil, errors.New("event: trailing data after record")
	}
	if r.EventVersion == "" || r.EventName == "" {
		return nil, errNoVersionOrName
	}
	return &r, nil
}

// Message is the payload endpoints receive: {"Records":[...]}.
type Message struct {
	Records []*Record `json:"Records"`
}

// MarshalMessage wraps records (Cairn sends exactly one) for an endpoint.
// The error is always nil.
func MarshalMessage(recs ...*Record) ([]byte, error) {
	return AppendMessage(make([]byte, 0, 1024), recs...), nil
}

// UnmarshalMessage decodes an endpoint payload (used by tests and tools).
func UnmarshalMessage(b []byte) (*Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("event: decode message: %w", err)
	}
	return &m, nil
}
