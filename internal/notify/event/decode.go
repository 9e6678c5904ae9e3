package event

import (
	"bytes"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// errNotCanonical sends decodeCanonical's caller to encoding/json.
var errNotCanonical = errors.New("event: not in AppendJSON's exact form")

// decodeCanonical decodes b if it is exactly AppendJSON's output with no
// escaped characters in any string (what nearly every stored record is),
// without reflection and with one allocation for all strings. Anything
// else returns errNotCanonical and Unmarshal uses encoding/json, so the
// result never differs from what encoding/json would decode.
func decodeCanonical(b []byte) (*Record, error) {
	if bytes.IndexByte(b, '\\') >= 0 || !utf8.Valid(b) {
		return nil, errNotCanonical
	}
	r := &Record{}
	if !decodeCanonicalInto(b, string(b), r, true) {
		return nil, errNotCanonical
	}
	return r, nil
}

// decodeCanonicalInto decodes b (escape-free, valid UTF-8) into r, whose
// strings become substrings of s (b as a string); without kvs, metadata
// and tags are checked but left nil. False: not canonical.
func decodeCanonicalInto(b []byte, s string, r *Record, kvs bool) bool {
	d := canonDec{b: b, s: s, ok: true, skipKVs: !kvs}
	d.lit(`{"eventVersion":`)
	r.EventVersion = d.str()
	d.lit(`,"eventSource":`)
	r.EventSource = d.str()
	d.lit(`,"awsRegion":`)
	r.AWSRegion = d.str()
	d.lit(`,"eventTime":`)
	if ts := d.str(); d.ok {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return false
		}
		r.EventTime = Time{t.UTC()}
	}
	d.lit(`,"eventName":`)
	r.EventName = d.str()
	d.lit(`,"userIdentity":{"principalId":`)
	r.UserIdentity.PrincipalID = d.str()
	d.lit(`},"requestParameters":{"sourceIPAddress":`)
	r.RequestParameters.SourceIPAddress = d.str()
	d.lit(`},"responseElements":{"x-amz-request-id":`)
	r.ResponseElements.RequestID = d.str()
	d.lit(`,"x-amz-id-2":`)
	r.ResponseElements.HostID = d.str()
	d.lit(`},"s3":{"s3SchemaVersion":`)
	r.S3.SchemaVersion = d.str()
	d.lit(`,"configurationId":`)
	r.S3.ConfigurationID = d.str()
	d.lit(`,"bucket":{"name":`)
	r.S3.Bucket.Name = d.str()
	d.lit(`,"ownerIdentity":{"principalId":`)
	r.S3.Bucket.OwnerIdentity.PrincipalID = d.str()
	d.lit(`},"arn":`)
	r.S3.Bucket.ARN = d.str()
	d.lit(`,"id":`)
	r.S3.Bucket.ID = d.str()
	d.lit(`},"object":{"key":`)
	r.S3.Object.Key = d.str()
	d.lit(`,"size":`)
	r.S3.Object.Size = d.int()
	d.lit(`,"eTag":`)
	r.S3.Object.ETag = d.str()
	d.lit(`,"versionId":`)
	r.S3.Object.VersionID = d.str()
	d.lit(`,"sequencer":`)
	r.S3.Object.Sequencer = d.str()
	d.lit(`,"metadata":`)
	r.S3.Object.Metadata = d.kvs()
	d.lit(`,"tags":`)
	r.S3.Object.Tags = d.kvs()
	d.lit(`}},"eventId":`)
	r.EventID = d.str()
	d.lit(`,"opaqueData":`)
	r.OpaqueData = d.str()
	d.lit(`}`)
	return d.ok && d.i == len(b)
}

type canonDec struct {
	b  []byte
	s  string // b as one string: decoded strings are substrings of it
	i  int
	ok bool
	// skipKVs: kvs checks the list and returns nil (nothing allocated).
	skipKVs bool
}

func (d *canonDec) lit(l string) {
	if !d.ok || !bytes.HasPrefix(d.b[d.i:], []byte(l)) {
		d.ok = false
		return
	}
	d.i += len(l)
}

// str reads a string without escapes (decodeCanonical ruled them out).
func (d *canonDec) str() string {
	if !d.ok || d.i >= len(d.b) || d.b[d.i] != '"' {
		d.ok = false
		return ""
	}
	end := bytes.IndexByte(d.b[d.i+1:], '"')
	if end < 0 {
		d.ok = false
		return ""
	}
	v := d.s[d.i+1 : d.i+1+end]
	for j := 0; j < len(v); j++ {
		if c := v[j]; c < 0x20 || c == '<' || c == '>' || c == '&' {
			d.ok = false // encoding/json would have escaped it: not ours
			return ""
		}
	}
	d.i += end + 2
	return v
}

func (d *canonDec) int() int64 {
	if !d.ok {
		return 0
	}
	j := d.i
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(d.s[d.i:j], 10, 64)
	if err != nil || (j-d.i > 1 && d.b[d.i] == '0') {
		d.ok = false
		return 0
	}
	d.i = j
	return n
}

// kvs reads null or a list of {"key":…,"val":…}.
func (d *canonDec) kvs() []KV {
	if !d.ok {
		return nil
	}
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		return nil
	}
	d.lit("[")
	var out []KV
	if !d.skipKVs {
		out = []KV{}
	}
	if d.ok && d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return out
	}
	for d.ok {
		d.lit(`{"key":`)
		k := d.str()
		d.lit(`,"val":`)
		v := d.str()
		d.lit("}")
		if !d.skipKVs {
			out = append(out, KV{k, v})
		}
		if d.ok && d.i < len(d.b) && d.b[d.i] == ',' {
			d.i++
			continue
		}
		d.lit("]")
		break
	}
	return out
}

// OrderingKey returns the "bucket/key" (object key decoded) of a stored
// record, which is what delivery orders by, after checking the record as
// Unmarshal would (the same records fail, with the same errors). For the
// canonical form it reads b in place: no copy of the record and no Record
// on the heap, only the key (delivery decodes ~every event it lists, and
// needs the rest only for CloudEvents attributes or a drop's log line).
func OrderingKey(b []byte) (string, error) {
	if len(b) > 0 && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		var r Record
		// r's strings alias b only until the key is built below.
		if decodeCanonicalInto(b, unsafe.String(unsafe.SliceData(b), len(b)), &r, false) {
			if r.EventVersion == "" || r.EventName == "" {
				return "", errNoVersionOrName
			}
			return r.S3.Bucket.Name + "/" + objectKey(r.S3.Object.Key), nil
		}
	}
	r, err := Unmarshal(b)
	if err != nil {
		return "", err
	}
	return r.S3.Bucket.Name + "/" + r.ObjectKey(), nil
}
