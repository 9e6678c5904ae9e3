package event

import (
	"fmt"
	"sort"
	"strings"
)

// Type is an S3 event type as written in a notification configuration,
// with the "s3:" prefix, e.g. "s3:ObjectCreated:Put". A Type ending in ":*"
// is a wildcard that matches every concrete type below it.
type Type string

// The event types Cairn accepts in configurations. The concrete ones (no
// "*") are what producers emit.
const (
	ObjectCreatedAll                     Type = "s3:ObjectCreated:*"
	ObjectCreatedPut                     Type = "s3:ObjectCreated:Put"
	ObjectCreatedPost                    Type = "s3:ObjectCreated:Post"
	ObjectCreatedCopy                    Type = "s3:ObjectCreated:Copy"
	ObjectCreatedCompleteMultipartUpload Type = "s3:ObjectCreated:CompleteMultipartUpload"

	ObjectRemovedAll                 Type = "s3:ObjectRemoved:*"
	ObjectRemovedDelete              Type = "s3:ObjectRemoved:Delete"
	ObjectRemovedDeleteMarkerCreated Type = "s3:ObjectRemoved:DeleteMarkerCreated"

	// RGW's lifecycle and tagging extensions; accepted now so configurations
	// written for RGW parse, emitted once lifecycle and tagging exist.
	ObjectLifecycleAll                      Type = "s3:ObjectLifecycle:*"
	ObjectLifecycleExpirationAll            Type = "s3:ObjectLifecycle:Expiration:*"
	ObjectLifecycleExpirationCurrent        Type = "s3:ObjectLifecycle:Expiration:Current"
	ObjectLifecycleExpirationNonCurrent     Type = "s3:ObjectLifecycle:Expiration:NonCurrent"
	ObjectLifecycleExpirationDeleteMarker   Type = "s3:ObjectLifecycle:Expiration:DeleteMarker"
	ObjectLifecycleExpirationAbortMultipart Type = "s3:ObjectLifecycle:Expiration:AbortMultipartUpload"
	ObjectLifecycleTransitionAll            Type = "s3:ObjectLifecycle:Transition:*"
	ObjectLifecycleTransitionCurrent        Type = "s3:ObjectLifecycle:Transition:Current"
	ObjectLifecycleTransitionNonCurrent     Type = "s3:ObjectLifecycle:Transition:NonCurrent"
	ObjectTaggingAll                        Type = "s3:ObjectTagging:*"
	ObjectTaggingPut                        Type = "s3:ObjectTagging:Put"
	ObjectTaggingDelete                     Type = "s3:ObjectTagging:Delete"
	LifecycleExpirationAll                  Type = "s3:LifecycleExpiration:*"
	LifecycleExpirationDelete               Type = "s3:LifecycleExpiration:Delete"
	LifecycleExpirationDeleteMarkerCreated  Type = "s3:LifecycleExpiration:DeleteMarkerCreated"
	LifecycleTransition                     Type = "s3:LifecycleTransition"
)

var known = map[Type]bool{}

// SentAs returns the event types RGW sends one change under, in its order
// (rgw_lc.cc): a lifecycle expiration goes out under its
// ObjectLifecycle:Expiration:* type and under the legacy
// LifecycleExpiration:* one, and a configuration gets a record for each
// type it selects. Other types are sent as themselves.
func SentAs(t Type) []Type {
	switch t {
	case ObjectLifecycleExpirationCurrent:
		return []Type{ObjectLifecycleExpirationCurrent, LifecycleExpirationDelete}
	case ObjectLifecycleExpirationNonCurrent:
		return []Type{LifecycleExpirationDelete, ObjectLifecycleExpirationNonCurrent}
	case ObjectLifecycleExpirationDeleteMarker:
		return []Type{ObjectLifecycleExpirationDeleteMarker, LifecycleExpirationDeleteMarkerCreated}
	}
	return []Type{t}
}

func init() {
	for _, t := range []Type{
		ObjectCreatedAll, ObjectCreatedPut, ObjectCreatedPost, ObjectCreatedCopy,
		ObjectCreatedCompleteMultipartUpload,
		ObjectRemovedAll, ObjectRemovedDelete, ObjectRemovedDeleteMarkerCreated,
		ObjectLifecycleAll, ObjectLifecycleExpirationAll, ObjectLifecycleExpirationCurrent,
		ObjectLifecycleExpirationNonCurrent, ObjectLifecycleExpirationDeleteMarker,
		ObjectLifecycleExpirationAbortMultipart, ObjectLifecycleTransitionAll,
		ObjectLifecycleTransitionCurrent, ObjectLifecycleTransitionNonCurrent,
		ObjectTaggingAll, ObjectTaggingPut, ObjectTaggingDelete,
		LifecycleExpirationAll, LifecycleExpirationDelete,
		LifecycleExpirationDeleteMarkerCreated, LifecycleTransition,
	} {
		known[t] = true
	}
}

// KnownTypes returns every accepted type, sorted.
func KnownTypes() []Type {
	out := make([]Type, 0, len(known))
	for t := range known {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ParseType validates an event type from a configuration. Only the AWS
// spelling with the "s3:" prefix is accepted, as AWS and RGW do.
func ParseType(s string) (Type, error) {
	t := Type(strings.TrimSpace(s))
	if !known[t] {
		return "", fmt.Errorf("unknown event type %q", s)
	}
	return t, nil
}

// IsWildcard reports whether t ends in ":*".
func (t Type) IsWildcard() bool { return strings.HasSuffix(string(t), ":*") }

// Matches reports whether the configured type t selects the emitted type
// ev: equal, or t is a wildcard and ev lies below it
// ("s3:ObjectLifecycle:*" selects "s3:ObjectLifecycle:Expiration:Current").
func (t Type) Matches(ev Type) bool {
	if t == ev {
		return true
	}
	if !t.IsWildcard() {
		return false
	}
	return strings.HasPrefix(string(ev), string(t[:len(t)-1])) && !ev.IsWildcard()
}

// Name is the type as it appears in an event record's eventName: without
// the "s3:" prefix (AWS and RGW both drop it).
func (t Type) Name() string { return strings.TrimPrefix(string(t), "s3:") }
