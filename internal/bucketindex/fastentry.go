package bucketindex

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// fastDecodeEntry decodes an entry as json.Marshal wrote it (Entry's own
// field names, no escapes in strings, no whitespace) without reflection:
// listing decodes every entry it returns, and encoding/json was 38 % of a
// gateway's CPU under the scale benchmark's mixed load (issue 24). It
// reports false for anything else (unknown fields, escapes, nulls,
// whitespace), and the caller falls back to encoding/json, so it never
// decides what an entry means, only how fast the common one is read.
// FuzzFastDecodeEntry holds it to encoding/json's result.
func fastDecodeEntry(b []byte) (Entry, bool) { return fastDecode(b, false) }

// fastDecodeListing is fastDecodeEntry for a listing, which reads only
// Key, Size, Seq, VersionID, Marker, ETag, ModTime, Owner, Parts, Version,
// Class and Meta: Tag and Manifest are skipped (left zero), Meta aliases b
// unchecked (b must not be reused), and the strings share one allocation.
// A listing page decodes 1,000 entries; this was ~20 % of a gateway's CPU
// under the RWLD mix at 2M objects (issue 24).
func fastDecodeListing(b []byte) (Entry, bool) { return fastDecode(b, true) }

func fastDecode(b []byte, listing bool) (Entry, bool) {
	var e Entry
	ok := fastDecodeInto(&e, b, listing, "")
	return e, ok
}

// fastDecodeInto is fastDecode into *e, which is zero (and is left
// partly set when it reports false). In a listing, a key equal to known
// is known, not copied.
func fastDecodeInto(e *Entry, b []byte, listing bool, known string) bool {
	p := fastParser{b: b}
	if !p.lit('{') {
		return false
	}
	if p.lit('}') {
		return p.end()
	}
	// In a listing the strings are spans of b, copied into one string at
	// the end.
	var spans [5][2]int // key, version id, etag, owner, class
	seen := 0           // bit per field: a repeated field goes to encoding/json
	for {
		name, ok := p.name()
		if !ok {
			return false
		}
		bit := entryFieldBit(name)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if listing {
			if si := listingSpan(bit); si >= 0 {
				start := p.i + 1
				if _, ok = p.span(); !ok {
					return false
				}
				spans[si] = [2]int{start, p.i - 1}
				goto next
			}
			switch bit {
			case fieldTag:
				_, ok = p.span()
				goto check
			case fieldManifest:
				_, ok = p.skipObject()
				goto check
			case fieldMeta:
				if e.Meta, ok = p.skipObject(); ok {
					e.Meta = e.Meta[:len(e.Meta):len(e.Meta)]
				}
				goto check
			}
		}
		switch bit {
		case fieldKey:
			e.Key, ok = p.str()
		case fieldSize:
			e.Size, ok = p.int()
		case fieldSeq:
			e.Seq, ok = p.uint()
		case fieldVersionID:
			e.VersionID, ok = p.str()
		case fieldMarker:
			e.Marker, ok = p.bool()
		case fieldETag:
			e.ETag, ok = p.str()
		case fieldModTime:
			start := p.i
			var s []byte
			if s, ok = p.span(); ok {
				if e.ModTime, ok = utcTime(s); !ok {
					// time.Time's own JSON parser, as encoding/json uses.
					ok = e.ModTime.UnmarshalJSON(p.b[start:p.i]) == nil
				}
			}
		case fieldOwner:
			e.Owner, ok = p.str()
		case fieldTag:
			e.Tag, ok = p.str()
		case fieldParts:
			var n int64
			n, ok = p.int()
			e.Parts = int(n)
			ok = ok && int64(e.Parts) == n
		case fieldVersion:
			e.Version, ok = p.uint()
		case fieldManifest:
			e.Manifest, ok = p.manifest()
		case fieldMeta:
			var raw []byte
			if raw, ok = p.object(); ok {
				e.Meta = json.RawMessage(append([]byte(nil), raw...))
			}
		case fieldClass:
			e.Class, ok = p.str()
		}
	check:
		if !ok {
			return false
		}
	next:
		if p.lit('}') {
			if !p.end() {
				return false
			}
			if listing {
				if k := spans[0]; known != "" && string(b[k[0]:k[1]]) == known {
					spans[0] = [2]int{}
					e.Key = known
					_, e.VersionID, e.ETag, e.Owner, e.Class = spanStrings(b, &spans)
				} else {
					e.Key, e.VersionID, e.ETag, e.Owner, e.Class = spanStrings(b, &spans)
				}
			}
			return true
		}
		if !p.lit(',') {
			return false
		}
	}
}

// spanStrings copies the spans of b into one string and returns its
// substrings: one allocation instead of one per field.
func spanStrings(b []byte, spans *[5][2]int) (key, vid, etag, owner, class string) {
	n := 0
	for _, s := range spans {
		n += s[1] - s[0]
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, s := range spans {
		sb.Write(b[s[0]:s[1]])
	}
	all := sb.String()
	out := [5]string{}
	off := 0
	for i, s := range spans {
		out[i] = all[off : off+s[1]-s[0]]
		off += s[1] - s[0]
	}
	return out[0], out[1], out[2], out[3], out[4]
}

const (
	fieldKey = 1 << iota
	fieldSize
	fieldSeq
	fieldVersionID
	fieldMarker
	fieldETag
	fieldModTime
	fieldOwner
	fieldTag
	fieldParts
	fieldVersion
	fieldManifest
	fieldMeta
	fieldClass
)

// entryFieldBit maps an Entry's JSON field name to its bit (0: unknown).
func entryFieldBit(name []byte) int {
	switch string(name) {
	case "k":
		return fieldKey
	case "s":
		return fieldSize
	case "q":
		return fieldSeq
	case "i":
		return fieldVersionID
	case "dm":
		return fieldMarker
	case "e":
		return fieldETag
	case "t":
		return fieldModTime
	case "o":
		return fieldOwner
	case "g":
		return fieldTag
	case "p":
		return fieldParts
	case "v":
		return fieldVersion
	case "m":
		return fieldManifest
	case "x":
		return fieldMeta
	case "sc":
		return fieldClass
	}
	return 0
}

// listingSpan is the index in a listing's spans of a string field.
func listingSpan(bit int) int {
	switch bit {
	case fieldKey:
		return 0
	case fieldVersionID:
		return 1
	case fieldETag:
		return 2
	case fieldOwner:
		return 3
	case fieldClass:
		return 4
	}
	return -1
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) end() bool { return p.i == len(p.b) }

func (p *fastParser) lit(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// span reads a string without escapes, control characters or non-ASCII
// bytes (encoding/json's rules for those are the fallback's) and returns
// its bytes, quotes included.
func (p *fastParser) span() ([]byte, bool) {
	if !p.lit('"') {
		return nil, false
	}
	n := bytes.IndexByte(p.b[p.i:], '"')
	if n < 0 || !plain(p.b[p.i:p.i+n]) {
		return nil, false
	}
	s := p.b[p.i : p.i+n]
	p.i += n + 1
	return s, true
}

// plain reports whether b holds no backslash, control character or
// non-ASCII byte, eight bytes at a time (listing decodes ~100 bytes of
// strings per entry).
func plain(b []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; len(b) >= 8; b = b[8:] {
		w := binary.LittleEndian.Uint64(b)
		bs := w ^ (lo * '\\') // a backslash becomes a zero byte
		// Any high bit; else a byte below 0x20; else a zero byte of bs.
		if w&hi != 0 || (w-lo*0x20)&^w&hi != 0 || (bs-lo)&^bs&hi != 0 {
			return false
		}
	}
	for _, c := range b {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// name reads a member's name and its colon. An entry's names are one or
// two letters: those are cut without a scan (a name that is not one of
// them, escapes included, makes entryFieldBit report 0).
func (p *fastParser) name() ([]byte, bool) {
	if b := p.b[p.i:]; len(b) >= 4 && b[0] == '"' {
		if b[2] == '"' && b[3] == ':' {
			p.i += 4
			return b[1:2], true
		}
		if len(b) >= 5 && b[3] == '"' && b[4] == ':' {
			p.i += 5
			return b[1:3], true
		}
	}
	n, ok := p.span()
	return n, ok && p.lit(':')
}

// str is span as a string.
func (p *fastParser) str() (string, bool) {
	b, ok := p.span()
	return string(b), ok
}

func (p *fastParser) number() ([]byte, bool) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || (n > 1 && p.b[digits] == '0') {
		return nil, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return nil, false
	}
	return p.b[start:p.i], true
}

func (p *fastParser) int() (int64, bool) {
	b, ok := p.number()
	if !ok {
		return 0, false
	}
	if v, ok := small(b); ok {
		return v, true
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

func (p *fastParser) uint() (uint64, bool) {
	b, ok := p.number()
	if !ok || b[0] == '-' {
		return 0, false
	}
	if v, ok := small(b); ok {
		return uint64(v), true
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
}

// small is a number of number's of at most 18 digits, which cannot
// overflow: strconv for the rest.
func small(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// utcTime reads the time json.Marshal writes for a UTC time.Time
// (RFC 3339 with nanoseconds and Z: 2006-01-02T15:04:05.999999999Z)
// without time.Parse's generality; false for any other form, which the
// caller leaves to time's own parser.
func utcTime(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(b []byte) (int, bool) {
		v := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	min, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || min > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		// A fraction of 1 to 9 digits (Marshal trims trailing zeros).
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := num(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			n *= 10
		}
		nsec = n
	}
	// Days since 1970-01-01 of the proleptic Gregorian date (H. Hinnant's
	// days_from_civil), cheaper than time.Date's normalization.
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400 // y >= 0: no floor needed
	yoe := y - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := int64(era)*146097 + int64(doe) - 719468
	return time.Unix(days*86400+int64(hour*3600+min*60+sec), int64(nsec)).UTC(), true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func (p *fastParser) bool() (bool, bool) {
	switch {
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		p.i += 4
		return true, true
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// manifest reads {"r":[{"p":..,"s":..,"z":..,"c":..,"ps":..},...]} or {}.
func (p *fastParser) manifest() (Manifest, bool) {
	var m Manifest
	if !p.lit('{') {
		return m, false
	}
	if p.lit('}') {
		return m, true
	}
	if name, ok := p.str(); !ok || name != "r" || !p.lit(':') || !p.lit('[') {
		return m, false
	}
	if p.lit(']') {
		m.Runs = []Run{}
		return m, p.lit('}')
	}
	for {
		r, ok := p.run()
		if !ok {
			return m, false
		}
		m.Runs = append(m.Runs, r)
		if p.lit(']') {
			return m, p.lit('}')
		}
		if !p.lit(',') {
			return m, false
		}
	}
}

func (p *fastParser) run() (Run, bool) {
	var r Run
	if !p.lit('{') {
		return r, false
	}
	if p.lit('}') {
		return r, true
	}
	seen := 0
	for {
		name, ok := p.str()
		if !ok || !p.lit(':') {
			return r, false
		}
		bit := runFieldBit(name)
		if bit == 0 || seen&bit != 0 {
			return r, false
		}
		seen |= bit
		switch name {
		case "p":
			r.Prefix, ok = p.str()
		case "s":
			r.Size, ok = p.int()
		case "z":
			r.StripeSize, ok = p.int()
		case "c":
			r.Enc, ok = p.bool()
		case "ps":
			r.Plain, ok = p.int()
		case "l":
			r.Pool, ok = p.str()
		case "kn":
			r.KeyName, ok = p.str()
		case "n":
			r.Inline, ok = p.bool()
		case "d":
			var b []byte
			if b, ok = p.span(); ok {
				r.Data, ok = decodeBase64(b)
			}
		default:
			return r, false
		}
		if !ok {
			return r, false
		}
		if p.lit('}') {
			return r, true
		}
		if !p.lit(',') {
			return r, false
		}
	}
}

func runFieldBit(name string) int {
	switch name {
	case "p":
		return 1
	case "s":
		return 2
	case "z":
		return 4
	case "c":
		return 8
	case "ps":
		return 16
	case "l":
		return 32
	case "kn":
		return 64
	case "n":
		return 128
	case "d":
		return 256
	}
	return 0
}

// decodeBase64 decodes a []byte field as encoding/json does (standard
// alphabet, padded); false for anything else, which the slow path judges.
func decodeBase64(b []byte) ([]byte, bool) {
	out := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(out, b)
	return out[:n], err == nil
}

// object returns the bytes of a JSON object value whose strings carry no
// escapes, checked by encoding/json.
func (p *fastParser) object() ([]byte, bool) {
	raw, ok := p.skipObject()
	return raw, ok && json.Valid(raw)
}

// skipObject returns the bytes of a JSON object value whose strings carry
// no escapes (so braces inside strings are the only ones to skip), matching
// its brackets but not checking its grammar.
func (p *fastParser) skipObject() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	start, depth, inStr := p.i, 0, false
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case inStr:
			if c == '\\' || c < 0x20 || c >= 0x80 {
				return nil, false
			}
			if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				p.i++
				return p.b[start:p.i], true
			}
		}
	}
	return nil, false
}
