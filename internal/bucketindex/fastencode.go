package bucketindex

import (
	"encoding/base64"
	"strconv"
	"time"

	json "github.com/goccy/go-json"
)

// The encoders here write what json.Marshal writes for an entry, a
// link_version input and its result, byte for byte, without reflection: a
// PUT encodes its entry three times (the class input, the stored head, the
// result), which was ~4 % of a gateway's CPU per 4 KiB PUT
// (docs/bench/putcpu.md). They take only the common case, strings of
// printable ASCII that need no escape and a compact Meta, and report false
// for anything else, so the caller falls back to json.Marshal: they decide
// nothing about the format. FuzzFastEncodeEntry holds them to json.Marshal.

// encodeEntry is json.Marshal(e).
func encodeEntry(e *Entry) ([]byte, error) {
	if b, ok := appendEntry(make([]byte, 0, entryBufSize(e)), e); ok {
		return b, nil
	}
	return json.Marshal(e)
}

// encodeLinkVersionIn is json.Marshal(li).
func encodeLinkVersionIn(li *linkVersionIn) ([]byte, error) {
	if b, ok := appendLinkVersionIn(make([]byte, 0, entryBufSize(&li.Entry)+64), li); ok {
		return b, nil
	}
	return json.Marshal(li)
}

// encodeVersionResult is json.Marshal(r).
func encodeVersionResult(r *VersionResult) ([]byte, error) {
	if b, ok := appendVersionResult(make([]byte, 0, entryBufSize(&r.Entry)+32), r); ok {
		return b, nil
	}
	return json.Marshal(r)
}

// entryBufSize is a little more than appendEntry writes for a usual e:
// names, punctuation, numbers and the time (~100 bytes), and its strings.
func entryBufSize(e *Entry) int {
	n := 112 + len(e.Key) + len(e.VersionID) + len(e.ETag) + len(e.Owner) + len(e.Tag) + len(e.Meta) + len(e.Class)
	for _, r := range e.Manifest.Runs {
		n += 48 + len(r.Prefix) + len(r.Pool) + len(r.KeyName)
	}
	return n
}

func appendLinkVersionIn(b []byte, li *linkVersionIn) ([]byte, bool) {
	ok := true
	b = append(b, `{"e":`...)
	if b, ok = appendEntry(b, &li.Entry); !ok {
		return b, false
	}
	if li.Mode != "" {
		if b, ok = appendStrField(b, `,"v":`, li.Mode); !ok {
			return b, false
		}
	}
	if li.IfAbsent {
		b = append(b, `,"a":true`...)
	}
	if li.IfExists {
		b = append(b, `,"x":true`...)
	}
	for _, f := range [...]struct{ name, v string }{{`,"m":`, li.IfETag}, {`,"nm":`, li.IfNoneETag}, {`,"t":`, li.IfTag}} {
		if f.v != "" {
			if b, ok = appendStrField(b, f.name, f.v); !ok {
				return b, false
			}
		}
	}
	if li.GCTime != 0 {
		b = strconv.AppendInt(append(b, `,"gt":`...), li.GCTime, 10)
	}
	return append(b, '}'), true
}

func appendVersionResult(b []byte, r *VersionResult) ([]byte, bool) {
	ok := true
	b = append(b, `{"e":`...)
	if b, ok = appendEntry(b, &r.Entry); !ok {
		return b, false
	}
	if r.Retry {
		b = append(b, `,"r":true`...)
	}
	if len(r.Freed) > 0 {
		b = append(b, `,"f":[`...)
		for i := range r.Freed {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendEntry(b, &r.Freed[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	if r.Current != nil {
		b = append(b, `,"c":`...)
		if b, ok = appendEntry(b, r.Current); !ok {
			return b, false
		}
	}
	if r.MarkerCurrent {
		b = append(b, `,"mc":true`...)
	}
	if r.CurrentIsEntry {
		b = append(b, `,"ce":true`...)
	}
	return append(b, '}'), true
}

// appendEntry appends e in Entry's field order with its omitempty rules.
func appendEntry(b []byte, e *Entry) ([]byte, bool) {
	ok := true
	if b, ok = appendStrField(b, `{"k":`, e.Key); !ok {
		return b, false
	}
	b = strconv.AppendInt(append(b, `,"s":`...), e.Size, 10)
	if e.Seq != 0 {
		b = strconv.AppendUint(append(b, `,"q":`...), e.Seq, 10)
	}
	if e.VersionID != "" {
		if b, ok = appendStrField(b, `,"i":`, e.VersionID); !ok {
			return b, false
		}
	}
	if e.Marker {
		b = append(b, `,"dm":true`...)
	}
	if b, ok = appendStrField(b, `,"e":`, e.ETag); !ok {
		return b, false
	}
	if b, ok = appendTime(append(b, `,"t":`...), e.ModTime); !ok {
		return b, false
	}
	if e.Owner != "" {
		if b, ok = appendStrField(b, `,"o":`, e.Owner); !ok {
			return b, false
		}
	}
	if b, ok = appendStrField(b, `,"g":`, e.Tag); !ok {
		return b, false
	}
	if e.Parts != 0 {
		b = strconv.AppendInt(append(b, `,"p":`...), int64(e.Parts), 10)
	}
	if e.Version != 0 {
		b = strconv.AppendUint(append(b, `,"v":`...), e.Version, 10)
	}
	b = append(b, `,"m":{`...)
	if len(e.Manifest.Runs) > 0 {
		b = append(b, `"r":[`...)
		for i := range e.Manifest.Runs {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendRun(b, &e.Manifest.Runs[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	if len(e.Meta) > 0 {
		if !compactSafe(e.Meta) {
			return b, false
		}
		b = append(append(b, `,"x":`...), e.Meta...)
	}
	if e.Class != "" {
		if b, ok = appendStrField(b, `,"sc":`, e.Class); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendRun(b []byte, r *Run) ([]byte, bool) {
	ok := true
	if b, ok = appendStrField(b, `{"p":`, r.Prefix); !ok {
		return b, false
	}
	b = strconv.AppendInt(append(b, `,"s":`...), r.Size, 10)
	b = strconv.AppendInt(append(b, `,"z":`...), r.StripeSize, 10)
	if r.Enc {
		b = append(b, `,"c":true`...)
	}
	if r.Plain != 0 {
		b = strconv.AppendInt(append(b, `,"ps":`...), r.Plain, 10)
	}
	if r.Pool != "" {
		if b, ok = appendStrField(b, `,"l":`, r.Pool); !ok {
			return b, false
		}
	}
	if r.KeyName != "" {
		if b, ok = appendStrField(b, `,"kn":`, r.KeyName); !ok {
			return b, false
		}
	}
	if r.Inline {
		b = append(b, `,"n":true`...)
	}
	if len(r.Data) > 0 { // json.Marshal's []byte: standard base64, padded
		b = append(b, `,"d":"`...)
		b = base64.StdEncoding.AppendEncode(b, r.Data)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

// appendStrField appends name and s quoted, if s needs no escape.
func appendStrField(b []byte, name, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return b, false
		}
	}
	b = append(append(b, name...), '"')
	return append(append(b, s...), '"'), true
}

// plainByte: printable ASCII that json.Marshal writes as is (it escapes
// quotes, backslashes and, for HTML, <, > and &).
func plainByte(c byte) bool {
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// appendTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds), for years it accepts.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return b, false // offsets RFC 3339 cannot write exactly
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// compactSafe reports whether json.Marshal writes raw JSON m as it is: no
// whitespace outside strings (compaction drops it), only printable ASCII
// and no <, > or & (HTML escaping rewrites them). m is trusted to be JSON
// that json.Marshal accepts: every writer of Meta produces it with
// json.Marshal.
func compactSafe(m []byte) bool {
	in := false
	for i := 0; i < len(m); i++ {
		switch metaClass[m[i]] {
		case metaPlain:
		case metaQuote:
			in = !in
		case metaSpace:
			if !in {
				return false
			}
		case metaEscape:
			// Inside a string (valid JSON has backslashes nowhere else);
			// the escaped byte must be plain too.
			if i++; i == len(m) || metaClass[m[i]] == metaBad {
				return false
			}
		default:
			return false
		}
	}
	return !in
}

const (
	metaPlain = iota
	metaQuote
	metaEscape
	metaSpace
	metaBad
)

// metaClass sorts bytes for compactSafe.
var metaClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == '"':
			t[c] = metaQuote
		case c == '\\':
			t[c] = metaEscape
		case c == ' ':
			t[c] = metaSpace
		case c < 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '&':
			t[c] = metaBad
		}
	}
	return t
}()
