package event

import (
	"strconv"
	"sync"
	"unicode/utf8"
)

// AppendJSON appends r's JSON, byte for byte what encoding/json gives for
// *Record (field order, HTML-safe string escaping, null for nil lists), to
// dst. It exists because every persistent event is encoded on the PUT's
// path; TestAppendJSONMatchesEncodingJSON holds it to encoding/json.
func AppendJSON(dst []byte, r *Record) []byte {
	dst = append(dst, `{"eventVersion":`...)
	dst = appendString(dst, r.EventVersion)
	dst = append(dst, `,"eventSource":`...)
	dst = appendString(dst, r.EventSource)
	dst = append(dst, `,"awsRegion":`...)
	dst = appendString(dst, r.AWSRegion)
	dst = append(dst, `,"eventTime":"`...)
	dst = r.EventTime.UTC().AppendFormat(dst, timeLayout)
	dst = append(dst, `","eventName":`...)
	dst = appendString(dst, r.EventName)
	dst = append(dst, `,"userIdentity":{"principalId":`...)
	dst = appendString(dst, r.UserIdentity.PrincipalID)
	dst = append(dst, `},"requestParameters":{"sourceIPAddress":`...)
	dst = appendString(dst, r.RequestParameters.SourceIPAddress)
	dst = append(dst, `},"responseElements":{"x-amz-request-id":`...)
	dst = appendString(dst, r.ResponseElements.RequestID)
	dst = append(dst, `,"x-amz-id-2":`...)
	dst = appendString(dst, r.ResponseElements.HostID)
	dst = append(dst, `},"s3":{"s3SchemaVersion":`...)
	dst = appendString(dst, r.S3.SchemaVersion)
	dst = append(dst, `,"configurationId":`...)
	dst = appendString(dst, r.S3.ConfigurationID)
	b := &r.S3.Bucket
	dst = append(dst, `,"bucket":{"name":`...)
	dst = appendString(dst, b.Name)
	dst = append(dst, `,"ownerIdentity":{"principalId":`...)
	dst = appendString(dst, b.OwnerIdentity.PrincipalID)
	dst = append(dst, `},"arn":`...)
	dst = appendString(dst, b.ARN)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, b.ID)
	o := &r.S3.Object
	dst = append(dst, `},"object":{"key":`...)
	dst = appendString(dst, o.Key)
	dst = append(dst, `,"size":`...)
	dst = strconv.AppendInt(dst, o.Size, 10)
	dst = append(dst, `,"eTag":`...)
	dst = appendString(dst, o.ETag)
	dst = append(dst, `,"versionId":`...)
	dst = appendString(dst, o.VersionID)
	dst = append(dst, `,"sequencer":`...)
	dst = appendString(dst, o.Sequencer)
	dst = append(dst, `,"metadata":`...)
	dst = appendKVs(dst, o.Metadata)
	dst = append(dst, `,"tags":`...)
	dst = appendKVs(dst, o.Tags)
	dst = append(dst, `}},"eventId":`...)
	dst = appendString(dst, r.EventID)
	dst = append(dst, `,"opaqueData":`...)
	dst = appendString(dst, r.OpaqueData)
	return append(dst, '}')
}

// AppendMessage appends {"Records":[...]} for recs, as MarshalMessage.
func AppendMessage(dst []byte, recs ...*Record) []byte {
	dst = append(dst, `{"Records":[`...)
	for i, r := range recs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSON(dst, r)
	}
	return append(dst, "]}"...)
}

// WrapRecord turns one stored record (Marshal's output) into the message
// endpoints receive, without decoding it: MarshalMessage(Unmarshal(b)) is
// the same bytes, since Marshal's output is what re-encoding gives.
func WrapRecord(dst, record []byte) []byte {
	dst = append(dst, `{"Records":[`...)
	dst = append(dst, record...)
	return append(dst, "]}"...)
}

func appendKVs(dst []byte, kvs []KV) []byte {
	if kvs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, kv := range kvs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		dst = appendString(dst, kv.Key)
		dst = append(dst, `,"val":`...)
		dst = appendString(dst, kv.Val)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping on: <, >
// and & as \u00XX, control characters short or as \u00XX, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Runs of plain ASCII (nearly every byte of a record) by table.
		for i < len(s) && plainASCII[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainASCII[c]: byte c is ASCII that a JSON string carries unescaped
// (encoding/json's HTML-safe set: no control characters, '"', '\\', '<',
// '>' or '&').
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters, U+2028/9, invalid UTF-8 as U+FFFD).
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }

// Buffers for encoding records on hot paths: GetBuffer returns an empty
// slice with room; PutBuffer takes it back once nothing refers to it.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// GetBuffer returns a pooled, empty buffer.
func GetBuffer() *[]byte { b := bufPool.Get().(*[]byte); *b = (*b)[:0]; return b }

// PutBuffer returns b to the pool; very large buffers are dropped.
func PutBuffer(b *[]byte) {
	if cap(*b) <= 64<<10 {
		bufPool.Put(b)
	}
}
