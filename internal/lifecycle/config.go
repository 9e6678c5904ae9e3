// Package lifecycle is S3 bucket lifecycle configuration: the XML document
// (PutBucketLifecycleConfiguration), its validation with the error codes AWS
// returns, and the pure decision "what does the configuration do to this
// object version now". It does no I/O: the lifecycle worker lists the bucket
// index, asks Evaluate per version, and carries out the answer through the
// driver (so expiry respects object lock and emits the normal events).
package lifecycle

import (
	"bytes"
	"crypto/rand"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// Limits AWS documents for a lifecycle configuration.
const (
	MaxRules    = 1000
	MaxIDLength = 255
)

// Error is a validation failure; Code is the S3 error code
// (MalformedXML, InvalidArgument, InvalidRequest, NotImplemented).
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func malformed(format string, a ...any) error {
	return &Error{Code: "MalformedXML", Message: fmt.Sprintf(format, a...)}
}

func invalid(format string, a ...any) error {
	return &Error{Code: "InvalidArgument", Message: fmt.Sprintf(format, a...)}
}

// Configuration is a bucket's LifecycleConfiguration.
type Configuration struct {
	XMLName xml.Name `xml:"LifecycleConfiguration"`
	Rules   []Rule   `xml:"Rule"`
}

// Rule is one lifecycle rule.
type Rule struct {
	ID     string  `xml:"ID,omitempty"`
	Status string  `xml:"Status"`
	Filter *Filter `xml:"Filter,omitempty"`
	// Prefix is the deprecated rule-level prefix (no Filter element).
	Prefix *string `xml:"Prefix,omitempty"`

	Expiration                     *Expiration                     `xml:"Expiration,omitempty"`
	NoncurrentVersionExpiration    *NoncurrentVersionExpiration    `xml:"NoncurrentVersionExpiration,omitempty"`
	AbortIncompleteMultipartUpload *AbortIncompleteMultipartUpload `xml:"AbortIncompleteMultipartUpload,omitempty"`
	Transitions                    []Transition                    `xml:"Transition,omitempty"`
	NoncurrentVersionTransitions   []NoncurrentVersionTransition   `xml:"NoncurrentVersionTransition,omitempty"`
}

// Transition moves current versions to StorageClass Days after their
// creation or from Date on.
type Transition struct {
	Days         *int    `xml:"Days,omitempty"`
	Date         *string `xml:"Date,omitempty"`
	StorageClass string  `xml:"StorageClass"`

	date time.Time
}

// NoncurrentVersionTransition moves noncurrent versions to StorageClass
// NoncurrentDays after they became noncurrent, keeping the
// NewerNoncurrentVersions newest where they are.
type NoncurrentVersionTransition struct {
	NoncurrentDays          *int   `xml:"NoncurrentDays,omitempty"`
	NewerNoncurrentVersions *int   `xml:"NewerNoncurrentVersions,omitempty"`
	StorageClass            string `xml:"StorageClass"`
}

// Tag is one key/value filter tag.
type Tag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

// Filter selects the objects a rule applies to: at most one of Prefix,
// Tag, the size bounds, or And (which combines them).
type Filter struct {
	Prefix                *string `xml:"Prefix,omitempty"`
	Tag                   *Tag    `xml:"Tag,omitempty"`
	ObjectSizeGreaterThan *int64  `xml:"ObjectSizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64  `xml:"ObjectSizeLessThan,omitempty"`
	And                   *And    `xml:"And,omitempty"`

	extra bool // And beside other predicates (refused)
}

// UnmarshalXML reads a Filter the way RGW does: besides AWS's forms (one
// predicate, or And), several predicates side by side (Prefix and Tag,
// several Tags, a size bound with another) are their conjunction. AWS
// documents only And for that; such a filter is kept as its And form,
// which is also how RGW returns it. And beside other predicates is
// ambiguous and refused.
func (f *Filter) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var raw struct {
		Prefix                *string `xml:"Prefix"`
		Tags                  []Tag   `xml:"Tag"`
		ObjectSizeGreaterThan *int64  `xml:"ObjectSizeGreaterThan"`
		ObjectSizeLessThan    *int64  `xml:"ObjectSizeLessThan"`
		And                   *And    `xml:"And"`
	}
	if err := d.DecodeElement(&raw, &start); err != nil {
		return err
	}
	n := len(raw.Tags)
	for _, set := range []bool{raw.Prefix != nil, raw.ObjectSizeGreaterThan != nil, raw.ObjectSizeLessThan != nil} {
		if set {
			n++
		}
	}
	*f = Filter{And: raw.And}
	switch {
	case raw.And != nil && n > 0:
		f.extra = true
	case n > 1:
		f.And = &And{Prefix: raw.Prefix, Tags: raw.Tags,
			ObjectSizeGreaterThan: raw.ObjectSizeGreaterThan, ObjectSizeLessThan: raw.ObjectSizeLessThan}
	default:
		f.Prefix, f.ObjectSizeGreaterThan, f.ObjectSizeLessThan = raw.Prefix, raw.ObjectSizeGreaterThan, raw.ObjectSizeLessThan
		if n == 1 && len(raw.Tags) == 1 {
			f.Tag = &raw.Tags[0]
		}
	}
	return nil
}

// And combines a prefix, tags and size bounds; all must match.
type And struct {
	Prefix                *string `xml:"Prefix,omitempty"`
	Tags                  []Tag   `xml:"Tag,omitempty"`
	ObjectSizeGreaterThan *int64  `xml:"ObjectSizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64  `xml:"ObjectSizeLessThan,omitempty"`
}

// Expiration expires current versions (a delete marker on versioned
// buckets) or removes expired object delete markers.
type Expiration struct {
	Days                      *int    `xml:"Days,omitempty"`
	Date                      *string `xml:"Date,omitempty"`
	ExpiredObjectDeleteMarker *bool   `xml:"ExpiredObjectDeleteMarker,omitempty"`

	date time.Time
}

// NoncurrentVersionExpiration removes noncurrent versions NoncurrentDays
// after they became noncurrent, keeping the NewerNoncurrentVersions newest.
type NoncurrentVersionExpiration struct {
	NoncurrentDays          *int `xml:"NoncurrentDays,omitempty"`
	NewerNoncurrentVersions *int `xml:"NewerNoncurrentVersions,omitempty"`
}

// AbortIncompleteMultipartUpload aborts uploads this many days after they
// were initiated.
type AbortIncompleteMultipartUpload struct {
	DaysAfterInitiation *int `xml:"DaysAfterInitiation,omitempty"`
}

// Parse decodes and validates a LifecycleConfiguration document. Errors
// are *Error with the code AWS returns.
func Parse(body []byte) (*Configuration, error) {
	var c Configuration
	d := xml.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&c); err != nil {
		return nil, malformed("The XML you provided was not well-formed or did not validate against our published schema.")
	}
	// Nothing but whitespace may follow the document.
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, malformed("trailing data after the document")
		}
		if cd, ok := tok.(xml.CharData); !ok || len(bytes.TrimSpace(cd)) > 0 {
			if _, isComment := tok.(xml.Comment); !isComment {
				return nil, malformed("trailing data after the document")
			}
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the configuration as AWS does; see Parse.
func (c *Configuration) Validate() error {
	if len(c.Rules) == 0 {
		return malformed("The lifecycle configuration must contain at least one rule.")
	}
	if len(c.Rules) > MaxRules {
		return malformed("The lifecycle configuration has %d rules; at most %d are allowed.", len(c.Rules), MaxRules)
	}
	ids := map[string]bool{}
	for i := range c.Rules {
		r := &c.Rules[i]
		if len(r.ID) > MaxIDLength {
			return invalid("ID length should not exceed allowed limit of %d", MaxIDLength)
		}
		if r.ID != "" {
			if ids[r.ID] {
				return invalid("Rule ID must be unique. Found same ID for more than one rule: %q", r.ID)
			}
			ids[r.ID] = true
		}
		if err := r.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (r *Rule) validate() error {
	switch r.Status {
	case "Enabled", "Disabled":
	default:
		return malformed("Status must be Enabled or Disabled, not %q", r.Status)
	}
	if r.Filter != nil && r.Prefix != nil {
		return malformed("A rule may have a Filter or a Prefix, not both.")
	}
	if r.Filter == nil && r.Prefix == nil {
		return malformed("A rule must have a Filter (or the legacy Prefix).")
	}
	if r.Filter != nil {
		if err := r.Filter.validate(); err != nil {
			return err
		}
	}
	if err := r.validateTransitions(); err != nil {
		return err
	}
	if r.Expiration == nil && r.NoncurrentVersionExpiration == nil && r.AbortIncompleteMultipartUpload == nil &&
		len(r.Transitions) == 0 && len(r.NoncurrentVersionTransitions) == 0 {
		return invalid("At least one action needs to be specified in a rule")
	}
	if e := r.Expiration; e != nil {
		n := 0
		if e.Days != nil {
			n++
			if *e.Days <= 0 {
				return invalid("'Days' for Expiration action must be a positive integer")
			}
		}
		if e.Date != nil {
			n++
			t, err := parseDate(*e.Date)
			if err != nil {
				return err
			}
			e.date = t
		}
		if e.ExpiredObjectDeleteMarker != nil {
			n++
			if r.Filter != nil && r.Filter.hasTags() {
				return invalid("ExpiredObjectDeleteMarker cannot be specified with object tag filters")
			}
		}
		if n != 1 {
			return malformed("Expiration must have exactly one of Days, Date or ExpiredObjectDeleteMarker.")
		}
	}
	if nv := r.NoncurrentVersionExpiration; nv != nil {
		if nv.NoncurrentDays == nil || *nv.NoncurrentDays <= 0 {
			return invalid("'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer")
		}
		if n := nv.NewerNoncurrentVersions; n != nil && (*n <= 0 || *n > 100) {
			return invalid("'NewerNoncurrentVersions' must be between 1 and 100")
		}
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil {
		if a.DaysAfterInitiation == nil || *a.DaysAfterInitiation <= 0 {
			return invalid("'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer")
		}
		if r.Filter != nil && r.Filter.hasTags() {
			return invalid("AbortIncompleteMultipartUpload cannot be specified with object tag filters")
		}
	}
	return nil
}

// parseDate reads a rule's Date: ISO 8601, at midnight UTC.
func parseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		t, err = time.Parse("2006-01-02", strings.TrimSpace(s))
	}
	if err != nil {
		return t, invalid("'Date' must be in ISO 8601 format")
	}
	t = t.UTC()
	if !t.Equal(t.Truncate(24 * time.Hour)) {
		return t, invalid("'Date' must be at midnight GMT")
	}
	return t, nil
}

// validClassName: S3's spelling of a storage class (whether this gateway
// configures it is checked where the configuration is stored).
func validClassName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// validateTransitions applies AWS's rules: each action names a storage
// class other than STANDARD, once per rule; a rule's Transitions use Days
// or Date, not both.
func (r *Rule) validateTransitions() error {
	seen := map[string]bool{}
	days, dates := false, false
	for i := range r.Transitions {
		t := &r.Transitions[i]
		if !validClassName(t.StorageClass) {
			return malformed("Transition must name a StorageClass.")
		}
		if t.StorageClass == "STANDARD" {
			return invalid("'StorageClass' of a Transition must not be STANDARD")
		}
		if seen[t.StorageClass] {
			return invalid("'StorageClass' must be different for each Transition of a rule")
		}
		seen[t.StorageClass] = true
		switch {
		case t.Days != nil && t.Date == nil:
			if *t.Days < 0 {
				return invalid("'Days' for Transition action must be a non-negative integer")
			}
			days = true
		case t.Date != nil && t.Days == nil:
			d, err := parseDate(*t.Date)
			if err != nil {
				return err
			}
			t.date, dates = d, true
		default:
			return malformed("Transition must have exactly one of Days or Date.")
		}
	}
	if days && dates {
		return invalid("Found mixed 'Date' and 'Days' based Transition actions in a rule")
	}
	seen = map[string]bool{}
	for _, t := range r.NoncurrentVersionTransitions {
		if !validClassName(t.StorageClass) {
			return malformed("NoncurrentVersionTransition must name a StorageClass.")
		}
		if t.StorageClass == "STANDARD" {
			return invalid("'StorageClass' of a NoncurrentVersionTransition must not be STANDARD")
		}
		if seen[t.StorageClass] {
			return invalid("'StorageClass' must be different for each NoncurrentVersionTransition of a rule")
		}
		seen[t.StorageClass] = true
		if t.NoncurrentDays == nil || *t.NoncurrentDays < 0 {
			return invalid("'NoncurrentDays' for NoncurrentVersionTransition action must be a non-negative integer")
		}
		if n := t.NewerNoncurrentVersions; n != nil && (*n <= 0 || *n > 100) {
			return invalid("'NewerNoncurrentVersions' must be between 1 and 100")
		}
	}
	return nil
}

// StorageClasses returns the classes the rules transition to, so the
// caller can refuse those it does not configure (InvalidStorageClass).
func (c *Configuration) StorageClasses() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range c.Rules {
		for _, t := range r.Transitions {
			if !seen[t.StorageClass] {
				seen[t.StorageClass] = true
				out = append(out, t.StorageClass)
			}
		}
		for _, t := range r.NoncurrentVersionTransitions {
			if !seen[t.StorageClass] {
				seen[t.StorageClass] = true
				out = append(out, t.StorageClass)
			}
		}
	}
	return out
}

func (f *Filter) hasTags() bool {
	return f.Tag != nil || (f.And != nil && len(f.And.Tags) > 0)
}

func (f *Filter) validate() error {
	n := 0
	for _, set := range []bool{f.Prefix != nil, f.Tag != nil, f.ObjectSizeGreaterThan != nil, f.ObjectSizeLessThan != nil, f.And != nil} {
		if set {
			n++
		}
	}
	if n > 1 || f.extra {
		return malformed("Filter must have And, or predicates without And, not both.")
	}
	if f.Tag != nil && f.Tag.Key == "" {
		return invalid("The tag key must not be empty.")
	}
	if err := sizeBounds(f.ObjectSizeGreaterThan, f.ObjectSizeLessThan); err != nil {
		return err
	}
	if a := f.And; a != nil {
		parts := len(a.Tags)
		if a.Prefix != nil {
			parts++
		}
		if a.ObjectSizeGreaterThan != nil {
			parts++
		}
		if a.ObjectSizeLessThan != nil {
			parts++
		}
		// AWS documents two or more; RGW takes one, and so do we.
		if parts < 1 {
			return malformed("And must hold at least one of Prefix, Tag and the size bounds.")
		}
		seen := map[string]bool{}
		for _, t := range a.Tags {
			if t.Key == "" {
				return invalid("The tag key must not be empty.")
			}
			if seen[t.Key] {
				return invalid("Duplicate Tag Keys are not allowed.")
			}
			seen[t.Key] = true
		}
		if err := sizeBounds(a.ObjectSizeGreaterThan, a.ObjectSizeLessThan); err != nil {
			return err
		}
	}
	return nil
}

func sizeBounds(gt, lt *int64) error {
	if gt != nil && *gt < 0 {
		return invalid("ObjectSizeGreaterThan must be a non-negative integer")
	}
	if lt != nil && *lt <= 0 {
		return invalid("ObjectSizeLessThan must be a positive integer")
	}
	if gt != nil && lt != nil && *gt >= *lt {
		return invalid("ObjectSizeGreaterThan must be less than ObjectSizeLessThan")
	}
	return nil
}

// AssignIDs gives every rule without an ID a random one, as AWS and RGW do
// (RGW: 48 lower-case letters and digits), so the rule can be named in
// x-amz-expiration and in events.
func (c *Configuration) AssignIDs() {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i := range c.Rules {
		if c.Rules[i].ID != "" {
			continue
		}
		b := make([]byte, 48)
		_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
		for j := range b {
			b[j] = alphabet[int(b[j])%len(alphabet)]
		}
		c.Rules[i].ID = string(b)
	}
}

// Marshal returns the document as stored and returned by
// GetBucketLifecycleConfiguration.
func (c *Configuration) Marshal() ([]byte, error) {
	out, err := xml.Marshal(struct {
		XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LifecycleConfiguration"`
		Rules   []Rule   `xml:"Rule"`
	}{Rules: c.Rules})
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), out...), nil
}
