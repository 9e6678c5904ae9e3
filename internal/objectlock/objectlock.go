// Package objectlock is S3 Object Lock: the bucket's ObjectLockConfiguration
// (default retention), per-version Retention and LegalHold documents and
// headers, and the one rule every deleting or overwriting path asks: may
// this version go now? It does no I/O; the driver stores the values with
// the version and calls Check before the index removes anything.
package objectlock

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Retention modes.
const (
	Governance = "GOVERNANCE"
	Compliance = "COMPLIANCE"
)

// Error is a failure with its S3 error code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func fail(code, format string, a ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// DefaultRetention is a bucket's default for new versions.
type DefaultRetention struct {
	Mode  string `xml:"Mode"`
	Days  *int   `xml:"Days,omitempty"`
	Years *int   `xml:"Years,omitempty"`
}

// Configuration is the ObjectLockConfiguration document.
type Configuration struct {
	XMLName           xml.Name `xml:"ObjectLockConfiguration"`
	ObjectLockEnabled string   `xml:"ObjectLockEnabled,omitempty"`
	Rule              *struct {
		DefaultRetention *DefaultRetention `xml:"DefaultRetention"`
	} `xml:"Rule,omitempty"`
}

func decode(body []byte, v any) error {
	if err := xml.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		return fail("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
	}
	return nil
}

// ParseConfiguration decodes and validates PutObjectLockConfiguration's body.
func ParseConfiguration(body []byte) (*Configuration, error) {
	var c Configuration
	if err := decode(body, &c); err != nil {
		return nil, err
	}
	if c.ObjectLockEnabled != "Enabled" {
		return nil, fail("MalformedXML", "ObjectLockEnabled must be Enabled")
	}
	if c.Rule != nil {
		d := c.Rule.DefaultRetention
		if d == nil {
			return nil, fail("MalformedXML", "Rule must contain a DefaultRetention")
		}
		if d.Mode != Governance && d.Mode != Compliance {
			return nil, fail("MalformedXML", "Mode must be GOVERNANCE or COMPLIANCE")
		}
		if (d.Days == nil) == (d.Years == nil) {
			return nil, fail("MalformedXML", "DefaultRetention must have exactly one of Days or Years")
		}
		if (d.Days != nil && *d.Days <= 0) || (d.Years != nil && *d.Years <= 0) {
			return nil, fail("InvalidRetentionPeriod", "Default retention period must be a positive integer value.")
		}
		if (d.Days != nil && *d.Days > 36500) || (d.Years != nil && *d.Years > 100) {
			return nil, fail("InvalidArgument", "Default retention period is too large")
		}
	}
	return &c, nil
}

// Marshal returns GetObjectLockConfiguration's body.
func (c *Configuration) Marshal() ([]byte, error) {
	out := *c
	out.XMLName = xml.Name{Space: "http://s3.amazonaws.com/doc/2006-03-01/", Local: "ObjectLockConfiguration"}
	b, err := xml.Marshal(out)
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

// Default returns the retention a new version gets from the bucket
// default at now, or the zero Retention.
func (c *Configuration) Default(now time.Time) Retention {
	if c == nil || c.Rule == nil || c.Rule.DefaultRetention == nil {
		return Retention{}
	}
	d := c.Rule.DefaultRetention
	until := now
	if d.Days != nil {
		until = now.AddDate(0, 0, *d.Days)
	} else if d.Years != nil {
		until = now.AddDate(*d.Years, 0, 0)
	}
	return Retention{Mode: d.Mode, Until: until.UTC()}
}

// Retention is a version's retention; the zero value is "none".
type Retention struct {
	Mode  string
	Until time.Time
}

// Active reports whether the retention still protects the version at now.
func (r Retention) Active(now time.Time) bool { return r.Mode != "" && now.Before(r.Until) }

type retentionDoc struct {
	XMLName         xml.Name `xml:"Retention"`
	Mode            string   `xml:"Mode,omitempty"`
	RetainUntilDate string   `xml:"RetainUntilDate,omitempty"`
}

// ParseRetention decodes PutObjectRetention's body. An empty Mode and date
// removes a (governance) retention.
func ParseRetention(body []byte, now time.Time) (Retention, error) {
	var d retentionDoc
	if err := decode(body, &d); err != nil {
		return Retention{}, err
	}
	if d.Mode == "" && d.RetainUntilDate == "" {
		return Retention{}, nil
	}
	return parseRetention(d.Mode, d.RetainUntilDate, now)
}

func parseRetention(mode, until string, now time.Time) (Retention, error) {
	if mode != Governance && mode != Compliance {
		return Retention{}, fail("MalformedXML", "Mode must be GOVERNANCE or COMPLIANCE")
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(until))
	if err != nil {
		return Retention{}, fail("InvalidArgument", "RetainUntilDate must be an ISO 8601 date-time")
	}
	if !t.After(now) {
		return Retention{}, fail("InvalidArgument", "The retain until date must be in the future!")
	}
	return Retention{Mode: mode, Until: t.UTC()}, nil
}

// MarshalRetention returns GetObjectRetention's body.
func MarshalRetention(r Retention) ([]byte, error) {
	b, err := xml.Marshal(struct {
		XMLName         xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ Retention"`
		Mode            string   `xml:"Mode"`
		RetainUntilDate string   `xml:"RetainUntilDate"`
	}{Mode: r.Mode, RetainUntilDate: r.Until.UTC().Format("2006-01-02T15:04:05.000Z")})
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

// ParseLegalHold decodes PutObjectLegalHold's body: true for ON.
func ParseLegalHold(body []byte) (bool, error) {
	var d struct {
		XMLName xml.Name `xml:"LegalHold"`
		Status  string   `xml:"Status"`
	}
	if err := decode(body, &d); err != nil {
		return false, err
	}
	switch d.Status {
	case "ON":
		return true, nil
	case "OFF":
		return false, nil
	}
	return false, fail("MalformedXML", "Status must be ON or OFF")
}

// MarshalLegalHold returns GetObjectLegalHold's body.
func MarshalLegalHold(on bool) ([]byte, error) {
	st := "OFF"
	if on {
		st = "ON"
	}
	b, err := xml.Marshal(struct {
		XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LegalHold"`
		Status  string   `xml:"Status"`
	}{Status: st})
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

// Headers are the x-amz-object-lock-* values a write carries.
type Headers struct {
	Retention Retention
	LegalHold *bool
}

// ParseHeaders reads the object lock headers of PutObject, CopyObject and
// CreateMultipartUpload. present is false when none was sent.
func ParseHeaders(h http.Header, now time.Time) (hs Headers, present bool, err error) {
	mode := h.Get("X-Amz-Object-Lock-Mode")
	until := h.Get("X-Amz-Object-Lock-Retain-Until-Date")
	hold := h.Get("X-Amz-Object-Lock-Legal-Hold")
	if mode == "" && until == "" && hold == "" {
		return Headers{}, false, nil
	}
	if (mode == "") != (until == "") {
		return Headers{}, true, fail("InvalidArgument", "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied")
	}
	if mode != "" {
		if mode != Governance && mode != Compliance {
			return Headers{}, true, fail("InvalidArgument", "Unknown wormMode directive.")
		}
		r, err := parseRetention(mode, until, now)
		if err != nil {
			return Headers{}, true, err
		}
		hs.Retention = r
	}
	switch hold {
	case "":
	case "ON", "OFF":
		on := hold == "ON"
		hs.LegalHold = &on
	default:
		return Headers{}, true, fail("InvalidArgument", "Legal Hold must be either of 'ON' or 'OFF'")
	}
	return hs, true, nil
}

// Check is the one rule for removing or overwriting a version in place:
// a legal hold or an active retention refuses it; an active GOVERNANCE
// retention yields to bypass (x-amz-bypass-governance-retention from a
// caller allowed s3:BypassGovernanceRetention). Refusals are AccessDenied.
func Check(r Retention, legalHold bool, bypass bool, now time.Time) error {
	if legalHold {
		return fail("AccessDenied", "Access Denied because object protected by object lock: a legal hold is in effect.")
	}
	if !r.Active(now) {
		return nil
	}
	if r.Mode == Governance && bypass {
		return nil
	}
	return fail("AccessDenied", "Access Denied because object protected by object lock: %s retention until %s.", r.Mode, r.Until.UTC().Format(time.RFC3339))
}

// CheckRetentionChange is the rule for PutObjectRetention: a COMPLIANCE
// retention may only be extended (same mode, later date); any other change
// of a GOVERNANCE one (shortened, removed, or made COMPLIANCE, as AWS and
// RGW decide) needs bypass.
func CheckRetentionChange(cur, next Retention, bypass bool, now time.Time) error {
	if !cur.Active(now) {
		return nil
	}
	extends := next.Mode == cur.Mode && !next.Until.Before(cur.Until)
	if cur.Mode == Compliance && !extends {
		return fail("AccessDenied", "Access Denied because object protected by object lock: a COMPLIANCE retention can only be extended.")
	}
	if cur.Mode == Governance && !extends && !bypass {
		return fail("AccessDenied", "Access Denied because object protected by object lock: changing the mode of, shortening or removing a GOVERNANCE retention needs x-amz-bypass-governance-retention.")
	}
	return nil
}
