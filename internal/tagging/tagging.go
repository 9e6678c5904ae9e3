// Package tagging is S3 object and bucket tag sets: the Tagging XML
// document, the x-amz-tagging header form, AWS's limits with the error codes
// AWS returns, and a compact stored encoding. It does no I/O.
package tagging

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AWS limits.
const (
	MaxObjectTags  = 10
	MaxBucketTags  = 50
	MaxKeyLength   = 128
	MaxValueLength = 256
)

// Error is a validation failure with its S3 error code (InvalidTag,
// BadRequest, MalformedXML, InvalidArgument).
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func fail(code, format string, a ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// Tag is one key/value pair.
type Tag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

// Set is a tag set in the order the client gave it.
type Set []Tag

// Map returns the set as a map (for filters and condition keys).
func (s Set) Map() map[string]string {
	m := make(map[string]string, len(s))
	for _, t := range s {
		m[t.Key] = t.Value
	}
	return m
}

// Kind says whose limits apply.
type Kind int

const (
	Object Kind = iota
	Bucket
)

type document struct {
	XMLName xml.Name `xml:"Tagging"`
	TagSet  struct {
		Tags []Tag `xml:"Tag"`
	} `xml:"TagSet"`
}

// ParseXML decodes and validates a Tagging document.
func ParseXML(body []byte, kind Kind) (Set, error) {
	var d document
	if err := xml.NewDecoder(bytes.NewReader(body)).Decode(&d); err != nil {
		return nil, fail("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
	}
	s := Set(d.TagSet.Tags)
	return s, s.Validate(kind)
}

// ParseHeader decodes the x-amz-tagging header (URL query form, as
// PutObject, CopyObject and CreateMultipartUpload take it).
func ParseHeader(h string) (Set, error) {
	if h == "" {
		return nil, nil
	}
	var s Set
	for _, part := range strings.Split(h, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return nil, fail("InvalidArgument", "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.")
		}
		s = append(s, Tag{Key: key, Value: val})
	}
	return s, s.Validate(Object)
}

// Validate applies AWS's limits for kind.
func (s Set) Validate(kind Kind) error {
	max := MaxObjectTags
	if kind == Bucket {
		max = MaxBucketTags
	}
	if len(s) > max {
		if kind == Bucket {
			return fail("InvalidTag", "Bucket tag count cannot be greater than %d", max)
		}
		return fail("BadRequest", "Object tags cannot be greater than %d", max)
	}
	seen := make(map[string]bool, len(s))
	for _, t := range s {
		if t.Key == "" || utf8.RuneCountInString(t.Key) > MaxKeyLength {
			return fail("InvalidTag", "The TagKey you have provided is invalid")
		}
		if utf8.RuneCountInString(t.Value) > MaxValueLength {
			return fail("InvalidTag", "The TagValue you have provided is invalid")
		}
		if !validChars(t.Key) {
			return fail("InvalidTag", "The TagKey you have provided is invalid")
		}
		if !validChars(t.Value) {
			return fail("InvalidTag", "The TagValue you have provided is invalid")
		}
		if strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return fail("InvalidTag", "Your TagKey cannot be prefixed with aws:")
		}
		if seen[t.Key] {
			return fail("InvalidTag", "Cannot provide multiple Tags with the same key")
		}
		seen[t.Key] = true
	}
	return nil
}

// validChars allows what AWS documents for tags: letters, digits, white
// space and + - = . _ : / @ (Unicode letters included).
func validChars(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == ' ', r == '+', r == '-', r == '=', r == '.', r == '_', r == ':', r == '/', r == '@':
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r > 127 && (isLetterOrDigit(r) || r == '\u3000'):
		default:
			return false
		}
	}
	return true
}

// MarshalDocument returns the GetObjectTagging / GetBucketTagging body.
func (s Set) MarshalDocument() ([]byte, error) {
	d := struct {
		XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ Tagging"`
		TagSet  struct {
			Tags []Tag `xml:"Tag"`
		} `xml:"TagSet"`
	}{}
	d.TagSet.Tags = s
	out, err := xml.Marshal(d)
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), out...), nil
}

// Encode is the stored form: the header form, keys sorted, so equal sets
// encode equally. Empty sets encode as "".
func (s Set) Encode() string {
	if len(s) == 0 {
		return ""
	}
	sorted := append(Set(nil), s...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	var b strings.Builder
	for i, t := range sorted {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(t.Key))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(t.Value))
	}
	return b.String()
}

// Decode reverses Encode. Stored sets were validated when written.
func Decode(enc string) (Set, error) {
	if enc == "" {
		return nil, nil
	}
	var s Set
	for _, part := range strings.Split(enc, "&") {
		k, v, _ := strings.Cut(part, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, err
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, err
		}
		s = append(s, Tag{Key: key, Value: val})
	}
	return s, nil
}

func isLetterOrDigit(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}
