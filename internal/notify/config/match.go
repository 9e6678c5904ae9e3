package config

import (
	"strings"

	"github.com/cairn-s3/cairn/internal/notify/event"
)

// Object is what filters look at. Key is the raw (not URL-encoded) key.
// Metadata keys are the x-amz-meta-… header names; matching ignores their
// case. Tags are the object's tag set.
type Object struct {
	Key      string
	Metadata map[string]string
	Tags     map[string]string
}

// Match returns the configurations that fire for an event of type ev on
// obj, in configuration order. Safe for concurrent use.
func (c *Configuration) Match(ev event.Type, obj Object) []*TopicConfiguration {
	var out []*TopicConfiguration
	for _, tc := range c.Topics {
		if tc.Matches(ev, obj) {
			out = append(out, tc)
		}
	}
	return out
}

// Matches reports whether this configuration fires for ev on obj: one of
// its event types selects ev, and every filter rule holds.
func (tc *TopicConfiguration) Matches(ev event.Type, obj Object) bool {
	selected := false
	for _, t := range tc.Events {
		if t.Matches(ev) {
			selected = true
			break
		}
	}
	if !selected {
		return false
	}
	k := &tc.Filter.Key
	if !strings.HasPrefix(obj.Key, k.Prefix) || !strings.HasSuffix(obj.Key, k.Suffix) {
		return false
	}
	if tc.keyRegex != nil && !tc.keyRegex.MatchString(obj.Key) {
		return false
	}
	for _, r := range tc.Filter.Metadata {
		v, ok := lookupFold(obj.Metadata, r.Name)
		if !ok || v != r.Value {
			return false
		}
	}
	for _, r := range tc.Filter.Tags {
		v, ok := obj.Tags[r.Name]
		if !ok || v != r.Value {
			return false
		}
	}
	return true
}

func lookupFold(m map[string]string, name string) (string, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}
