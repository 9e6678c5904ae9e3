package authz

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

type opKind uint8

const (
	opStringEquals opKind = iota
	opStringEqualsIgnoreCase
	opStringLike
	opNumericEquals
	opNumericLessThan
	opNumericLessThanEquals
	opNumericGreaterThan
	opNumericGreaterThanEquals
	opDateEquals
	opDateLessThan
	opDateLessThanEquals
	opDateGreaterThan
	opDateGreaterThanEquals
	opBool
	opIPAddress
	opArnLike
	opBinaryEquals
	opNull
)

type opSpec struct {
	kind   opKind
	negate bool
}

// operators are the IAM condition operators, without the ForAnyValue: /
// ForAllValues: prefixes and the IfExists suffix.
var operators = map[string]opSpec{
	"StringEquals":              {opStringEquals, false},
	"StringNotEquals":           {opStringEquals, true},
	"StringEqualsIgnoreCase":    {opStringEqualsIgnoreCase, false},
	"StringNotEqualsIgnoreCase": {opStringEqualsIgnoreCase, true},
	"StringLike":                {opStringLike, false},
	"StringNotLike":             {opStringLike, true},
	"NumericEquals":             {opNumericEquals, false},
	"NumericNotEquals":          {opNumericEquals, true},
	"NumericLessThan":           {opNumericLessThan, false},
	"NumericLessThanEquals":     {opNumericLessThanEquals, false},
	"NumericGreaterThan":        {opNumericGreaterThan, false},
	"NumericGreaterThanEquals":  {opNumericGreaterThanEquals, false},
	"DateEquals":                {opDateEquals, false},
	"DateNotEquals":             {opDateEquals, true},
	"DateLessThan":              {opDateLessThan, false},
	"DateLessThanEquals":        {opDateLessThanEquals, false},
	"DateGreaterThan":           {opDateGreaterThan, false},
	"DateGreaterThanEquals":     {opDateGreaterThanEquals, false},
	"Bool":                      {opBool, false},
	"IpAddress":                 {opIPAddress, false},
	"NotIpAddress":              {opIPAddress, true},
	"ArnEquals":                 {opArnLike, false},
	"ArnLike":                   {opArnLike, false},
	"ArnNotEquals":              {opArnLike, true},
	"ArnNotLike":                {opArnLike, true},
	"BinaryEquals":              {opBinaryEquals, false},
	"Null":                      {opNull, false},
}

type setKind uint8

const (
	setNone setKind = iota
	setAnyValue
	setAllValues
)

// condition is one (operator, key, values) triple of a Condition block,
// with its values parsed once.
type condition struct {
	op       string // as written, for reasons
	spec     opSpec
	set      setKind
	ifExists bool
	key      string // lower case
	values   []string
	nums     []float64
	times    []time.Time
	nets     []netip.Prefix
	null     bool // Null: true = key must be absent
	vars     bool // some value holds a policy variable (${...})
}

func parseConditions(raw json.RawMessage) ([]condition, error) {
	var block map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, malformed("Condition must be an object of operators to objects of keys")
	}
	var out []condition
	for opName, keys := range block {
		c := condition{op: opName}
		name := opName
		if rest, ok := strings.CutPrefix(name, "ForAnyValue:"); ok {
			c.set, name = setAnyValue, rest
		} else if rest, ok := strings.CutPrefix(name, "ForAllValues:"); ok {
			c.set, name = setAllValues, rest
		}
		if rest, ok := strings.CutSuffix(name, "IfExists"); ok && rest != "Null" {
			c.ifExists, name = true, rest
		}
		spec, ok := operators[name]
		if !ok || (spec.kind == opNull && (c.set != setNone || c.ifExists)) {
			return nil, malformed("Invalid Condition type : %s", opName)
		}
		c.spec = spec
		if len(keys) == 0 {
			return nil, malformed("Condition %s has no keys", opName)
		}
		for key, v := range keys {
			cc := c
			if !validConditionKey(key) {
				return nil, malformed("Policy has an invalid condition key: %s", key)
			}
			cc.key = strings.ToLower(key)
			vals, err := conditionValues(v)
			if err != nil || len(vals) == 0 {
				return nil, malformed("Invalid value for condition %s key %s", opName, key)
			}
			if err := cc.compile(vals); err != nil {
				return nil, err
			}
			out = append(out, cc)
		}
	}
	return out, nil
}

func validConditionKey(k string) bool {
	svc, name, ok := strings.Cut(k, ":")
	if !ok || name == "" {
		return false
	}
	switch strings.ToLower(svc) {
	case "aws", "s3", "sns", "sts", "iam":
		return true
	}
	// An OIDC provider's claims in trust policies: "<issuer host/path>:sub"
	// (the host may carry a port, so the claim is after the last colon).
	i := strings.LastIndexByte(k, ':')
	switch strings.ToLower(k[i+1:]) {
	case "sub", "aud", "azp", "amr", "email", "oaud":
		return i > 0
	}
	return false
}

// conditionValues accepts a string, number or bool, or an array of them.
func conditionValues(raw json.RawMessage) ([]string, error) {
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err != nil {
		s, err := scalar(raw)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, err := scalar(e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func scalar(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strings.TrimSpace(string(raw)), nil
	}
	return "", fmt.Errorf("not a scalar")
}

func (c *condition) compile(vals []string) error {
	bad := func() error { return malformed("Invalid value for condition %s key %s", c.op, c.key) }
	c.values = vals
	for _, v := range vals {
		c.vars = c.vars || strings.Contains(v, "${")
	}
	switch c.spec.kind {
	case opNumericEquals, opNumericLessThan, opNumericLessThanEquals, opNumericGreaterThan, opNumericGreaterThanEquals:
		for _, v := range vals {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return bad()
			}
			c.nums = append(c.nums, f)
		}
	case opDateEquals, opDateLessThan, opDateLessThanEquals, opDateGreaterThan, opDateGreaterThanEquals:
		for _, v := range vals {
			t, ok := parseDate(v)
			if !ok {
				return bad()
			}
			c.times = append(c.times, t)
		}
	case opBool, opNull:
		for _, v := range vals {
			lv := strings.ToLower(v)
			if lv != "true" && lv != "false" {
				return bad()
			}
			c.null = lv == "true"
		}
		if c.spec.kind == opNull && len(vals) != 1 {
			return bad()
		}
	case opIPAddress:
		for _, v := range vals {
			p, ok := parseIPPrefix(v)
			if !ok {
				return bad()
			}
			c.nets = append(c.nets, p)
		}
	case opStringEqualsIgnoreCase:
		for i, v := range vals {
			c.values[i] = strings.ToLower(v)
		}
	}
	return nil
}

func parseDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), true
	}
	return time.Time{}, false
}

func parseIPPrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// eval reports whether the condition holds for ctx.
func (c *condition) eval(ctx Context) bool {
	vals, present := ctx[c.key]
	if c.spec.kind == opNull {
		return c.null == (!present || len(vals) == 0)
	}
	if !present || len(vals) == 0 {
		switch {
		case c.ifExists:
			return true
		case c.set == setAllValues:
			return true // vacuously: every one of no values matches
		case c.set == setAnyValue:
			return false
		}
		// A missing key fails a positive operator; a negated one ("the key
		// is not X") holds, as IAM documents.
		return c.spec.negate
	}
	switch c.set {
	case setAnyValue:
		for _, v := range vals {
			if c.one(v, ctx) != c.spec.negate {
				return true
			}
		}
		return false
	case setAllValues:
		for _, v := range vals {
			if c.one(v, ctx) == c.spec.negate {
				return false
			}
		}
		return true
	}
	// Single-valued: a positive operator needs some value to match; a
	// negated one needs none to.
	for _, v := range vals {
		if c.one(v, ctx) {
			return !c.spec.negate
		}
	}
	return c.spec.negate
}

// one reports whether request value v matches any of the policy values
// under the positive form of the operator.
func (c *condition) one(v string, ctx Context) bool {
	switch c.spec.kind {
	case opStringEquals, opBinaryEquals:
		for _, p := range c.values {
			if p2, ok := c.expand(p, ctx); ok && p2 == v {
				return true
			}
		}
	case opStringEqualsIgnoreCase:
		for _, p := range c.values {
			if p2, ok := c.expand(p, ctx); ok && strings.EqualFold(p2, v) {
				return true
			}
		}
	case opStringLike, opArnLike:
		for _, p := range c.values {
			if p2, ok := c.expand(p, ctx); ok && wildMatch(p2, v) {
				return true
			}
		}
	case opNumericEquals, opNumericLessThan, opNumericLessThanEquals, opNumericGreaterThan, opNumericGreaterThanEquals:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return false
		}
		for _, p := range c.nums {
			if compare(c.spec.kind-opNumericEquals, cmpFloat(f, p)) {
				return true
			}
		}
	case opDateEquals, opDateLessThan, opDateLessThanEquals, opDateGreaterThan, opDateGreaterThanEquals:
		t, ok := parseDate(v)
		if !ok {
			return false
		}
		for _, p := range c.times {
			if compare(c.spec.kind-opDateEquals, t.Compare(p)) {
				return true
			}
		}
	case opBool:
		b, err := strconv.ParseBool(strings.ToLower(v))
		return err == nil && b == c.null
	case opIPAddress:
		a, err := netip.ParseAddr(v)
		if err != nil {
			return false
		}
		a = a.Unmap()
		for _, p := range c.nets {
			if p.Contains(a) {
				return true
			}
		}
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compare applies relation r (0 =, 1 <, 2 <=, 3 >, 4 >=, in the order of
// the op constants) to a three-way comparison result.
func compare(r opKind, c int) bool {
	switch r {
	case 0:
		return c == 0
	case 1:
		return c < 0
	case 2:
		return c <= 0
	case 3:
		return c > 0
	case 4:
		return c >= 0
	}
	return false
}

// expand substitutes policy variables in a value when it has any.
func (c *condition) expand(v string, ctx Context) (string, bool) {
	if !c.vars {
		return v, true
	}
	return substitute(v, ctx)
}

// substitute expands policy variables (${aws:username}, ${*}, ${?}, ${$})
// in s from ctx. A variable whose key is missing makes the value match
// nothing, as IAM does.
func substitute(s string, ctx Context) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		b.WriteString(s[:i])
		name := s[i+2 : i+j]
		switch name {
		case "*", "?", "$":
			b.WriteString(name)
		default:
			v, ok := ctx[strings.ToLower(name)]
			if !ok || len(v) != 1 {
				return "", false
			}
			b.WriteString(v[0])
		}
		s = s[i+j+1:]
	}
}
