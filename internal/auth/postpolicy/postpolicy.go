// Package postpolicy parses and checks the policy document of S3 browser
// POST uploads (AWS "Browser-based uploads using POST"): a base64 JSON
// document with an expiration and a list of conditions on the form fields.
// It does no I/O and knows nothing about signatures: s3api verifies the
// signature over the base64 text before trusting the document.
package postpolicy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors. s3api maps ErrMalformed to InvalidPolicyDocument and the others
// to AccessDenied with "Invalid according to Policy: " + the error text.
var (
	ErrMalformed = errors.New("invalid policy document")
	ErrExpired   = errors.New("Policy expired.")
)

// ConditionError is a failed condition or an uncovered form field; its
// text follows S3's ("Policy Condition failed: [...]", "Extra input
// fields: ...").
type ConditionError struct{ Msg string }

func (e *ConditionError) Error() string { return e.Msg }

// Op is a condition's matching type.
type Op string

const (
	OpEq          Op = "eq"
	OpStartsWith  Op = "starts-with"
	OpLengthRange Op = "content-length-range"
)

// Condition is one policy condition. Field is lower-cased without "$":
// form field names and condition keys are matched case-insensitively
// (values are not).
type Condition struct {
	Op       Op
	Field    string
	Value    string
	Min, Max int64 // content-length-range
	raw      string
}

// Policy is a parsed policy document.
type Policy struct {
	Expiration time.Time
	Conditions []Condition
}

// Decode parses a base64 policy document.
func Decode(b64 string) (Policy, error) {
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return Policy{}, fmt.Errorf("%w: not base64", ErrMalformed)
	}
	return Parse(data)
}

// Parse parses a policy document's JSON.
func Parse(data []byte) (Policy, error) {
	// The document's own keys are case-sensitive (s3-tests: "CONDITIONS"
	// and "EXPIRATION" are refused); encoding/json would fold their case.
	var top map[string]json.RawMessage
	var doc struct {
		Expiration *string
		Conditions []json.RawMessage
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return Policy{}, fmt.Errorf("%w: Invalid JSON.", ErrMalformed)
	}
	if v, ok := top["expiration"]; ok {
		if err := json.Unmarshal(v, &doc.Expiration); err != nil {
			return Policy{}, fmt.Errorf("%w: Invalid 'expiration' value.", ErrMalformed)
		}
	}
	if v, ok := top["conditions"]; ok {
		if err := json.Unmarshal(v, &doc.Conditions); err != nil {
			return Policy{}, fmt.Errorf("%w: Invalid JSON.", ErrMalformed)
		}
	}
	if doc.Expiration == nil {
		return Policy{}, fmt.Errorf("%w: Policy missing expiration.", ErrMalformed)
	}
	exp, err := time.Parse(time.RFC3339Nano, *doc.Expiration)
	if err != nil {
		return Policy{}, fmt.Errorf("%w: Invalid 'expiration' value: '%s'", ErrMalformed, *doc.Expiration)
	}
	if doc.Conditions == nil {
		return Policy{}, fmt.Errorf("%w: Policy missing conditions.", ErrMalformed)
	}
	p := Policy{Expiration: exp}
	for _, raw := range doc.Conditions {
		c, err := parseCondition(raw)
		if err != nil {
			return Policy{}, err
		}
		p.Conditions = append(p.Conditions, c...)
	}
	return p, nil
}

func parseCondition(raw json.RawMessage) ([]Condition, error) {
	raw = bytes.TrimSpace(raw)
	bad := fmt.Errorf("%w: Invalid Policy: Invalid Simple-Condition: %s", ErrMalformed, raw)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		// {"field": "value"}: exact match; several pairs are several conditions.
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
			return nil, bad
		}
		var out []Condition
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				return nil, bad
			}
			out = append(out, Condition{Op: OpEq, Field: strings.ToLower(k), Value: s, raw: string(raw)})
		}
		return out, nil
	case len(raw) > 0 && raw[0] == '[':
		var a []any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&a); err != nil || len(a) != 3 {
			return nil, bad
		}
		op, _ := a[0].(string)
		switch Op(strings.ToLower(op)) {
		case OpEq, OpStartsWith:
			f, ok1 := a[1].(string)
			v, ok2 := a[2].(string)
			if !ok1 || !ok2 || !strings.HasPrefix(f, "$") {
				return nil, bad
			}
			return []Condition{{Op: Op(strings.ToLower(op)), Field: strings.ToLower(f[1:]), Value: v, raw: string(raw)}}, nil
		case OpLengthRange:
			lo, err1 := toInt(a[1])
			hi, err2 := toInt(a[2])
			if err1 != nil || err2 != nil || lo < 0 || hi < lo {
				return nil, bad
			}
			return []Condition{{Op: OpLengthRange, Min: lo, Max: hi, raw: string(raw)}}, nil
		}
		return nil, bad
	}
	return nil, bad
}

// toInt accepts a JSON number or a numeric string (clients send both).
func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Int64()
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, errors.New("not a number")
}

// Expired reports whether the policy is past its expiration at now.
func (p Policy) Expired(now time.Time) bool { return !now.Before(p.Expiration) }

// LengthRange returns the content-length-range bounds (the tightest when
// there are several) and whether the policy has one.
func (p Policy) LengthRange() (min, max int64, ok bool) {
	for _, c := range p.Conditions {
		if c.Op != OpLengthRange {
			continue
		}
		if !ok || c.Min > min {
			min = c.Min
		}
		if !ok || c.Max < max {
			max = c.Max
		}
		ok = true
	}
	return min, max, ok
}

// Exempt reports whether a form field needs no condition: S3 exempts the
// signature fields, the policy itself, the file and x-ignore-* fields.
func Exempt(field string) bool {
	switch field {
	case "policy", "file", "x-amz-signature", "signature", "awsaccesskeyid":
		return true
	}
	return strings.HasPrefix(field, "x-ignore-")
}

// Check evaluates every condition against fields (lower-cased names,
// values after ${filename} expansion; "bucket" included) and requires
// every non-exempt form field to be named by some condition. A field a
// condition names but the form lacks counts as empty.
func (p Policy) Check(fields map[string]string, formFields []string) error {
	covered := map[string]bool{}
	for _, c := range p.Conditions {
		if c.Op == OpLengthRange {
			continue
		}
		covered[c.Field] = true
		v := fields[c.Field]
		ok := false
		switch c.Op {
		case OpEq:
			ok = v == c.Value
		case OpStartsWith:
			ok = strings.HasPrefix(v, c.Value)
			if c.Field == "content-type" && ok {
				// S3 matches each value of a comma-separated Content-Type.
				for _, part := range strings.Split(v, ",") {
					ok = ok && strings.HasPrefix(strings.TrimSpace(part), c.Value)
				}
			}
		}
		if !ok {
			return &ConditionError{Msg: "Policy Condition failed: " + c.raw}
		}
	}
	var extra []string
	for _, f := range formFields {
		if !Exempt(f) && !covered[f] {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 {
		return &ConditionError{Msg: "Extra input fields: " + strings.Join(extra, ", ")}
	}
	return nil
}
