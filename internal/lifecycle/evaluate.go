package lifecycle

import (
	"strings"
	"time"
)

// Day is the real length of a lifecycle day. A shorter day (the
// lc-debug-interval option, RGW's rgw_lc_debug_interval) makes rules fire
// quickly in tests; then due times are not rounded to midnight.
const Day = 24 * time.Hour

// Version is what the worker knows of one object version when it asks
// what the configuration does to it.
type Version struct {
	Key          string
	Size         int64
	ModTime      time.Time
	Tags         map[string]string
	IsLatest     bool
	DeleteMarker bool
	// NoncurrentSince is when a newer version replaced this one (that
	// version's mtime); zero for the latest.
	NoncurrentSince time.Time
	// NewerNoncurrent counts the noncurrent versions of the key that are
	// newer than this one.
	NewerNoncurrent int
	// OnlyVersion is true when this is the key's only version (a delete
	// marker that is also the only version is "expired").
	OnlyVersion bool
	// StorageClass is the version's class ("" = STANDARD).
	StorageClass string
}

// Action is what a rule does to a version.
type Action int

const (
	None Action = iota
	// ExpireCurrent deletes the current version: on a versioned bucket
	// that writes a delete marker, otherwise the object goes.
	ExpireCurrent
	// ExpireNoncurrent permanently deletes a noncurrent version.
	ExpireNoncurrent
	// RemoveDeleteMarker permanently deletes an expired object delete marker.
	RemoveDeleteMarker
	// TransitionCurrent and TransitionNoncurrent move a version's data to
	// Decision.StorageClass.
	TransitionCurrent
	TransitionNoncurrent
)

// EventName is the RGW notification event type for the action, without
// the "s3:" prefix.
func (a Action) EventName() string {
	switch a {
	case ExpireCurrent:
		return "ObjectLifecycle:Expiration:Current"
	case ExpireNoncurrent:
		return "ObjectLifecycle:Expiration:NonCurrent"
	case RemoveDeleteMarker:
		return "ObjectLifecycle:Expiration:DeleteMarker"
	case TransitionCurrent:
		return "ObjectLifecycle:Transition:Current"
	case TransitionNoncurrent:
		return "ObjectLifecycle:Transition:NonCurrent"
	}
	return ""
}

// EventNames are every event type RGW emits for the action: a transition
// of a current version is also AWS's LifecycleTransition.
func (a Action) EventNames() []string {
	switch a {
	case None:
		return nil
	case TransitionCurrent:
		return []string{a.EventName(), "LifecycleTransition"}
	}
	return []string{a.EventName()}
}

// AbortEventName is the event of an upload aborted by a rule.
const AbortEventName = "ObjectLifecycle:Expiration:AbortMultipartUpload"

// Decision is an action and the rule that chose it.
type Decision struct {
	Action Action
	RuleID string
	// StorageClass is a transition's target class.
	StorageClass string
}

// Due returns when something that started at from becomes days old: with
// a real day, rounded up to the next midnight UTC as AWS does.
func Due(from time.Time, days int, day time.Duration) time.Time {
	if day <= 0 {
		day = Day
	}
	t := from.Add(time.Duration(days) * day)
	if day != Day {
		return t
	}
	t = t.UTC()
	m := t.Truncate(Day)
	if m.Before(t) {
		m = m.Add(Day)
	}
	return m
}

// Evaluate returns what the enabled rules do to v at now. When several
// rules apply, removal of the data wins over a delete marker (the first
// such rule in document order names the decision).
func (c *Configuration) Evaluate(v Version, now time.Time, day time.Duration) Decision {
	var best Decision
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.Status != "Enabled" || !r.matches(v) {
			continue
		}
		a := r.action(v, now, day)
		if a == None {
			continue
		}
		if best.Action == None || (best.Action == ExpireCurrent && a != ExpireCurrent) {
			best = Decision{Action: a, RuleID: r.ID}
		}
	}
	if best.Action != None || v.DeleteMarker {
		return best // an expiry wins over a transition
	}
	return c.transition(v, now, day)
}

// transition picks, among the due transitions of the enabled rules that
// match v, the one due last (the furthest step of a Days or Date
// sequence). Nothing happens when v is already in that class, or in the
// class of a matching transition due even later (data never moves back
// up the sequence).
func (c *Configuration) transition(v Version, now time.Time, day time.Duration) Decision {
	type step struct {
		due   time.Time
		class string
		rule  string
	}
	var steps []step
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.Status != "Enabled" || !r.matches(v) {
			continue
		}
		if v.IsLatest {
			for _, t := range r.Transitions {
				var due time.Time
				switch {
				case t.Days != nil:
					due = Due(v.ModTime, *t.Days, day)
				case !t.date.IsZero():
					due = t.date
				default:
					continue
				}
				steps = append(steps, step{due, t.StorageClass, r.ID})
			}
			continue
		}
		if v.NoncurrentSince.IsZero() {
			continue
		}
		for _, t := range r.NoncurrentVersionTransitions {
			if t.NoncurrentDays == nil {
				continue
			}
			if t.NewerNoncurrentVersions != nil && v.NewerNoncurrent < *t.NewerNoncurrentVersions {
				continue
			}
			steps = append(steps, step{Due(v.NoncurrentSince, *t.NoncurrentDays, day), t.StorageClass, r.ID})
		}
	}
	var best *step
	for i := range steps {
		s := &steps[i]
		if !now.Before(s.due) && (best == nil || s.due.After(best.due)) {
			best = s
		}
	}
	if best == nil || v.StorageClass == best.class {
		return Decision{}
	}
	for _, s := range steps {
		if s.class == v.StorageClass && s.due.After(best.due) {
			return Decision{}
		}
	}
	a := TransitionCurrent
	if !v.IsLatest {
		a = TransitionNoncurrent
	}
	return Decision{Action: a, RuleID: best.rule, StorageClass: best.class}
}

func (r *Rule) action(v Version, now time.Time, day time.Duration) Action {
	if !v.IsLatest {
		nv := r.NoncurrentVersionExpiration
		if nv == nil || nv.NoncurrentDays == nil || v.NoncurrentSince.IsZero() {
			return None
		}
		if nv.NewerNoncurrentVersions != nil && v.NewerNoncurrent < *nv.NewerNoncurrentVersions {
			return None
		}
		if !now.Before(Due(v.NoncurrentSince, *nv.NoncurrentDays, day)) {
			return ExpireNoncurrent
		}
		return None
	}
	e := r.Expiration
	if e == nil {
		return None
	}
	if v.DeleteMarker {
		// An expired object delete marker (the key's only version) goes when
		// the rule asks for it, or with a Days rule once it is due.
		if !v.OnlyVersion {
			return None
		}
		if e.ExpiredObjectDeleteMarker != nil && *e.ExpiredObjectDeleteMarker {
			return RemoveDeleteMarker
		}
		if e.Days != nil && !now.Before(Due(v.ModTime, *e.Days, day)) {
			return RemoveDeleteMarker
		}
		return None
	}
	switch {
	case e.Days != nil:
		if !now.Before(Due(v.ModTime, *e.Days, day)) {
			return ExpireCurrent
		}
	case e.Date != nil:
		if !e.date.IsZero() && !now.Before(e.date) {
			return ExpireCurrent
		}
	}
	return None
}

// Expiry returns when the enabled rules expire v, a current version (the
// earliest Expiration Days or Date among the rules that match it), and
// which rule does: what x-amz-expiration tells a client. ok is false when
// no rule expires it.
func (c *Configuration) Expiry(v Version, day time.Duration) (at time.Time, ruleID string, ok bool) {
	for i := range c.Rules {
		r := &c.Rules[i]
		e := r.Expiration
		if r.Status != "Enabled" || e == nil || !r.matches(v) {
			continue
		}
		var t time.Time
		switch {
		case e.Days != nil:
			t = Due(v.ModTime, *e.Days, day)
		case e.Date != nil && !e.date.IsZero():
			t = e.date
		default:
			continue
		}
		if !ok || t.Before(at) {
			at, ruleID, ok = t, r.ID, true
		}
	}
	return at, ruleID, ok
}

// AbortUpload reports whether an incomplete multipart upload of key
// initiated at initiated is to be aborted at now, and by which rule.
func (c *Configuration) AbortUpload(key string, initiated, now time.Time, day time.Duration) (ruleID string, ok bool) {
	for i := range c.Rules {
		r := &c.Rules[i]
		a := r.AbortIncompleteMultipartUpload
		if r.Status != "Enabled" || a == nil || a.DaysAfterInitiation == nil {
			continue
		}
		// Uploads have no tags or size yet: only the prefix can match.
		if !strings.HasPrefix(key, r.prefix()) {
			continue
		}
		if !now.Before(Due(initiated, *a.DaysAfterInitiation, day)) {
			return r.ID, true
		}
	}
	return "", false
}

// Prefixes returns the key prefixes the enabled rules can match, so the
// worker lists only those ranges; "" means the whole bucket.
func (c *Configuration) Prefixes() []string {
	var out []string
	for i := range c.Rules {
		if c.Rules[i].Status != "Enabled" {
			continue
		}
		p := c.Rules[i].prefix()
		if p == "" {
			return []string{""}
		}
		out = append(out, p)
	}
	return out
}

// NeedsTags reports whether any enabled rule filters on tags (the worker
// then reads each candidate's tags).
func (c *Configuration) NeedsTags() bool {
	for i := range c.Rules {
		if c.Rules[i].Status == "Enabled" && c.Rules[i].Filter != nil && c.Rules[i].Filter.hasTags() {
			return true
		}
	}
	return false
}

func (r *Rule) prefix() string {
	switch {
	case r.Prefix != nil:
		return *r.Prefix
	case r.Filter == nil:
		return ""
	case r.Filter.Prefix != nil:
		return *r.Filter.Prefix
	case r.Filter.And != nil && r.Filter.And.Prefix != nil:
		return *r.Filter.And.Prefix
	}
	return ""
}

func (r *Rule) matches(v Version) bool {
	if !strings.HasPrefix(v.Key, r.prefix()) {
		return false
	}
	f := r.Filter
	if f == nil {
		return true
	}
	if f.Tag != nil && !hasTag(v, *f.Tag) {
		return false
	}
	if !sizeMatches(v, f.ObjectSizeGreaterThan, f.ObjectSizeLessThan) {
		return false
	}
	if a := f.And; a != nil {
		for _, t := range a.Tags {
			if !hasTag(v, t) {
				return false
			}
		}
		if !sizeMatches(v, a.ObjectSizeGreaterThan, a.ObjectSizeLessThan) {
			return false
		}
	}
	return true
}

func hasTag(v Version, t Tag) bool {
	got, ok := v.Tags[t.Key]
	return ok && got == t.Value
}

// sizeMatches applies the strict size bounds; delete markers have no size
// and are not filtered by it.
func sizeMatches(v Version, gt, lt *int64) bool {
	if v.DeleteMarker {
		return true
	}
	if gt != nil && !(v.Size > *gt) {
		return false
	}
	if lt != nil && !(v.Size < *lt) {
		return false
	}
	return true
}
