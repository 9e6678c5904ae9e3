package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// S3 error codes returned by Parse.
const (
	CodeMalformedXML    = "MalformedXML"
	CodeInvalidArgument = "InvalidArgument"
)

// Error is a client error; both codes are HTTP 400.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// HTTPStatus is 400 for every configuration error.
func (e *Error) HTTPStatus() int { return 400 }

func invalid(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// Limits.
const (
	MaxIDLen      = 255
	MaxRuleValue  = 1024
	MaxRegexLen   = 1024
	MaxTopics     = 100 // configurations per bucket
	MaxKVRules    = 10  // metadata or tag rules per filter
	MaxBodyLength = 1 << 20
)

// Namespace is S3's XML namespace, used when rendering.
const Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// Configuration is a bucket's notification configuration.
type Configuration struct {
	Topics []*TopicConfiguration `json:"topics"`
}

// TopicConfiguration sends the selected events of a bucket to a topic.
type TopicConfiguration struct {
	ID       string       `json:"id"`
	TopicARN string       `json:"topic_arn"`
	Events   []event.Type `json:"events"` // never empty after Parse
	Filter   Filter       `json:"filter"`

	keyRegex *regexp.Regexp
}

// Filter narrows a configuration to some objects; empty parts match all.
type Filter struct {
	Key      KeyFilter `json:"key"`
	Metadata []Rule    `json:"metadata,omitempty"` // names are "x-amz-meta-…", lower case
	Tags     []Rule    `json:"tags,omitempty"`
}

// KeyFilter rules on the object key. Regex must match the whole key.
type KeyFilter struct {
	Prefix string `json:"prefix,omitempty"`
	Suffix string `json:"suffix,omitempty"`
	Regex  string `json:"regex,omitempty"`
}

// Rule is a name/value pair that must be present on the object.
type Rule struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// XML shapes. Element names match without regard to namespace, so bodies
// with and without xmlns="http://s3.amazonaws.com/doc/2006-03-01/" parse.
type xmlConfig struct {
	XMLName     xml.Name         `xml:"NotificationConfiguration"`
	Xmlns       string           `xml:"xmlns,attr,omitempty"`
	Topics      []xmlTopicConfig `xml:"TopicConfiguration"`
	Queues      []struct{}       `xml:"QueueConfiguration"`
	Lambdas     []struct{}       `xml:"CloudFunctionConfiguration"`
	EventBridge []struct{}       `xml:"EventBridgeConfiguration"`
}

type xmlTopicConfig struct {
	ID     *string    `xml:"Id"` // nil: absent (generated); "": refused (RGW)
	Topic  string     `xml:"Topic"`
	Events []string   `xml:"Event"`
	Filter *xmlFilter `xml:"Filter,omitempty"`
}

type xmlFilter struct {
	S3Key      *xmlRules `xml:"S3Key,omitempty"`
	S3Metadata *xmlRules `xml:"S3Metadata,omitempty"`
	S3Tags     *xmlRules `xml:"S3Tags,omitempty"`
}

type xmlRules struct {
	Rules []xmlRule `xml:"FilterRule"`
}

type xmlRule struct {
	Name  string `xml:"Name"`
	Value string `xml:"Value"`
}

// Parse reads and validates a PutBucketNotificationConfiguration body.
// An empty configuration (no TopicConfiguration) is valid and means "no
// notifications". Errors are *Error with code MalformedXML or
// InvalidArgument. Topic existence is the caller's to check.
func Parse(body []byte) (*Configuration, error) {
	if len(body) > MaxBodyLength {
		return nil, &Error{CodeMalformedXML, "configuration body too large"}
	}
	var x xmlConfig
	if err := xml.Unmarshal(body, &x); err != nil {
		return nil, &Error{CodeMalformedXML, "the XML is not well-formed or not a NotificationConfiguration: " + err.Error()}
	}
	if len(x.Queues)+len(x.Lambdas)+len(x.EventBridge) > 0 {
		return nil, invalid("only TopicConfiguration is supported (no QueueConfiguration, CloudFunctionConfiguration or EventBridgeConfiguration)")
	}
	if len(x.Topics) > MaxTopics {
		return nil, invalid("at most %d TopicConfiguration elements per bucket", MaxTopics)
	}
	c := &Configuration{}
	seen := map[string]bool{}
	for i := range x.Topics {
		tc, err := parseTopic(&x.Topics[i])
		if err != nil {
			return nil, err
		}
		if seen[tc.ID] {
			return nil, invalid("duplicate notification id %q", tc.ID)
		}
		seen[tc.ID] = true
		c.Topics = append(c.Topics, tc)
	}
	return c, nil
}

func parseTopic(x *xmlTopicConfig) (*TopicConfiguration, error) {
	tc := &TopicConfiguration{TopicARN: strings.TrimSpace(x.Topic)}
	if x.ID != nil {
		// AWS generates an Id when there is none; an Id element left
		// empty is refused, as RGW refuses it.
		if tc.ID = strings.TrimSpace(*x.ID); tc.ID == "" {
			return nil, invalid("TopicConfiguration: empty Id")
		}
	}
	if tc.TopicARN == "" {
		return nil, invalid("TopicConfiguration %q: missing Topic", tc.ID)
	}
	if _, err := topic.ParseARN(tc.TopicARN); err != nil {
		return nil, invalid("TopicConfiguration %q: %s", tc.ID, err.(*topic.Error).Message)
	}
	dup := map[event.Type]bool{}
	for _, s := range x.Events {
		t, err := event.ParseType(s)
		if err != nil {
			return nil, invalid("TopicConfiguration %q: %v", tc.ID, err)
		}
		if !dup[t] {
			dup[t] = true
			tc.Events = append(tc.Events, t)
		}
	}
	if len(tc.Events) == 0 {
		// AWS requires events; RGW (and so Cairn) reads none as all
		// creations and removals.
		tc.Events = []event.Type{event.ObjectCreatedAll, event.ObjectRemovedAll}
	}
	if x.Filter != nil {
		if err := parseFilter(tc, x.Filter); err != nil {
			return nil, err
		}
	}
	if tc.ID == "" {
		tc.ID = defaultID(tc)
	}
	if len(tc.ID) > MaxIDLen {
		return nil, invalid("notification id longer than %d bytes", MaxIDLen)
	}
	return tc, nil
}

// defaultID names a configuration sent without Id (AWS generates one) from
// its content, so re-sending the same body keeps the same id.
func defaultID(tc *TopicConfiguration) string {
	b, _ := json.Marshal(tc)
	sum := sha256.Sum256(b)
	return "notif-" + hex.EncodeToString(sum[:8])
}

func parseFilter(tc *TopicConfiguration, f *xmlFilter) error {
	if f.S3Key != nil {
		got := map[string]bool{}
		for _, r := range f.S3Key.Rules {
			name := strings.ToLower(strings.TrimSpace(r.Name))
			if got[name] {
				return invalid("TopicConfiguration %q: duplicate S3Key rule %q", tc.ID, name)
			}
			got[name] = true
			if len(r.Value) > MaxRuleValue {
				return invalid("TopicConfiguration %q: S3Key %s value longer than %d bytes", tc.ID, name, MaxRuleValue)
			}
			switch name {
			case "prefix":
				tc.Filter.Key.Prefix = r.Value
			case "suffix":
				tc.Filter.Key.Suffix = r.Value
			case "regex":
				tc.Filter.Key.Regex = r.Value
			default:
				return invalid("TopicConfiguration %q: S3Key rule name must be prefix, suffix or regex, not %q", tc.ID, r.Name)
			}
		}
	}
	var err error
	if f.S3Metadata != nil {
		if tc.Filter.Metadata, err = parseKV(tc.ID, "S3Metadata", f.S3Metadata, metadataName); err != nil {
			return err
		}
	}
	if f.S3Tags != nil {
		if tc.Filter.Tags, err = parseKV(tc.ID, "S3Tags", f.S3Tags, func(s string) string { return s }); err != nil {
			return err
		}
	}
	return tc.compile()
}

// metadataName is the canonical form of a metadata filter name: lower
// case with the x-amz-meta- prefix (RGW wants the prefix; accepting it
// missing costs nothing).
func metadataName(s string) string {
	s = strings.ToLower(s)
	if !strings.HasPrefix(s, "x-amz-meta-") {
		s = "x-amz-meta-" + s
	}
	return s
}

func parseKV(id, what string, x *xmlRules, canon func(string) string) ([]Rule, error) {
	if len(x.Rules) > MaxKVRules {
		return nil, invalid("TopicConfiguration %q: at most %d %s rules", id, MaxKVRules, what)
	}
	var out []Rule
	seen := map[string]bool{}
	for _, r := range x.Rules {
		name := strings.TrimSpace(r.Name)
		if name == "" {
			return nil, invalid("TopicConfiguration %q: %s rule without Name", id, what)
		}
		name = canon(name)
		if seen[name] {
			return nil, invalid("TopicConfiguration %q: duplicate %s rule %q", id, what, name)
		}
		seen[name] = true
		if len(r.Value) > MaxRuleValue {
			return nil, invalid("TopicConfiguration %q: %s value longer than %d bytes", id, what, MaxRuleValue)
		}
		out = append(out, Rule{Name: name, Value: r.Value})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (tc *TopicConfiguration) compile() error {
	tc.keyRegex = nil
	re := tc.Filter.Key.Regex
	if re == "" {
		return nil
	}
	if len(re) > MaxRegexLen {
		return invalid("TopicConfiguration %q: regex longer than %d bytes", tc.ID, MaxRegexLen)
	}
	// RGW uses std::regex_match: the whole key must match.
	c, err := regexp.Compile(`^(?:` + re + `)$`)
	if err != nil {
		return invalid("TopicConfiguration %q: bad S3Key regex %q: %v", tc.ID, re, err)
	}
	tc.keyRegex = c
	return nil
}

// XML renders c as GetBucketNotificationConfiguration returns it.
func (c *Configuration) XML() []byte {
	x := xmlConfig{Xmlns: Namespace}
	for _, tc := range c.Topics {
		x.Topics = append(x.Topics, tc.toXML())
	}
	b, err := xml.Marshal(x)
	if err != nil {
		panic(err) // fixed struct types only
	}
	return append([]byte(xml.Header), b...)
}

func (tc *TopicConfiguration) toXML() xmlTopicConfig {
	x := xmlTopicConfig{ID: &tc.ID, Topic: tc.TopicARN}
	for _, e := range tc.Events {
		x.Events = append(x.Events, string(e))
	}
	var f xmlFilter
	k := tc.Filter.Key
	if k != (KeyFilter{}) {
		f.S3Key = &xmlRules{}
		for _, r := range []xmlRule{{"prefix", k.Prefix}, {"suffix", k.Suffix}, {"regex", k.Regex}} {
			if r.Value != "" {
				f.S3Key.Rules = append(f.S3Key.Rules, r)
			}
		}
	}
	kv := func(rules []Rule) *xmlRules {
		if len(rules) == 0 {
			return nil
		}
		x := &xmlRules{}
		for _, r := range rules {
			x.Rules = append(x.Rules, xmlRule{r.Name, r.Value})
		}
		return x
	}
	f.S3Metadata, f.S3Tags = kv(tc.Filter.Metadata), kv(tc.Filter.Tags)
	if f.S3Key != nil || f.S3Metadata != nil || f.S3Tags != nil {
		x.Filter = &f
	}
	return x
}

// Get returns the configuration with the given id, or nil.
func (c *Configuration) Get(id string) *TopicConfiguration {
	for _, tc := range c.Topics {
		if tc.ID == id {
			return tc
		}
	}
	return nil
}

// Merge adds add's configurations to c, replacing those with the same Id
// and keeping the others in place (RGW's PutBucketNotificationConfiguration,
// which never deletes). A result over MaxTopics is an InvalidArgument
// *Error and leaves c unchanged.
func (c *Configuration) Merge(add *Configuration) error {
	out := append([]*TopicConfiguration(nil), c.Topics...)
	for _, tc := range add.Topics {
		replaced := false
		for i, old := range out {
			if old.ID == tc.ID {
				out[i], replaced = tc, true
				break
			}
		}
		if !replaced {
			out = append(out, tc)
		}
	}
	if len(out) > MaxTopics {
		return invalid("at most %d TopicConfiguration elements per bucket (%d after adding these)", MaxTopics, len(out))
	}
	c.Topics = out
	return nil
}

// Mode is how PutBucketNotificationConfiguration treats the configuration
// a bucket already has (gateway option notification-config-mode).
type Mode string

const (
	// ModeAWS replaces the whole configuration (AWS S3; the default).
	ModeAWS Mode = "aws"
	// ModeRGW adds or updates configurations by Id; only an empty
	// configuration deletes them all (RGW).
	ModeRGW Mode = "rgw"
)

// Remove deletes the configuration with the given id and reports whether
// it existed (RGW's DELETE of one notification).
func (c *Configuration) Remove(id string) bool {
	for i, tc := range c.Topics {
		if tc.ID == id {
			c.Topics = append(c.Topics[:i], c.Topics[i+1:]...)
			return true
		}
	}
	return false
}

// Encode renders c as JSON for storage.
func Encode(c *Configuration) ([]byte, error) { return json.Marshal(c) }

// Decode reads what Encode wrote and recompiles filters.
func Decode(b []byte) (*Configuration, error) {
	var c Configuration
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config: decode: %w", err)
	}
	for _, tc := range c.Topics {
		if tc == nil {
			return nil, errors.New("config: decode: null topic configuration")
		}
		if err := tc.compile(); err != nil {
			return nil, fmt.Errorf("config: decode: %w", err)
		}
	}
	return &c, nil
}
