package bucketindex

import (
	"encoding/json"
	"strconv"
)

// fastDecodeEntry decodes an entry as json.Marshal wrote it (Entry's own
// field names, no escapes in strings, no whitespace) without reflection:
// listing decodes every entry it returns, and encoding/json was 38 % of a
// gateway's CPU under the scale benchmark's mixed load (issue 24). It
// reports false for anything else (unknown fields, escapes, nulls,
// whitespace), and the caller falls back to encoding/json, so it never
// decides what an entry means, only how fast the common one is read.
// FuzzFastDecodeEntry holds it to encoding/json's result.
func fastDecodeEntry(b []byte) (Entry, bool) {
	var e Entry
	p := fastParser{b: b}
	if !p.lit('{') {
		return e, false
	}
	if p.lit('}') {
		return e, p.end()
	}
	seen := 0 // bit per field: a repeated field goes to encoding/json
	for {
		name, ok := p.str()
		if !ok || !p.lit(':') {
			return e, false
		}
		bit, ok := entryFieldBit[name]
		if !ok || seen&bit != 0 {
			return e, false
		}
		seen |= bit
		switch name {
		case "k":
			e.Key, ok = p.str()
		case "s":
			e.Size, ok = p.int()
		case "q":
			e.Seq, ok = p.uint()
		case "i":
			e.VersionID, ok = p.str()
		case "dm":
			e.Marker, ok = p.bool()
		case "e":
			e.ETag, ok = p.str()
		case "t": // time.Time's own JSON parser, as encoding/json uses
			start := p.i
			if _, ok = p.str(); ok {
				ok = e.ModTime.UnmarshalJSON(p.b[start:p.i]) == nil
			}
		case "o":
			e.Owner, ok = p.str()
		case "g":
			e.Tag, ok = p.str()
		case "p":
			var n int64
			n, ok = p.int()
			e.Parts = int(n)
			ok = ok && int64(e.Parts) == n
		case "v":
			e.Version, ok = p.uint()
		case "m":
			e.Manifest, ok = p.manifest()
		case "x":
			var raw []byte
			if raw, ok = p.object(); ok {
				e.Meta = json.RawMessage(append([]byte(nil), raw...))
			}
		}
		if !ok {
			return e, false
		}
		if p.lit('}') {
			return e, p.end()
		}
		if !p.lit(',') {
			return e, false
		}
	}
}

var entryFieldBit = map[string]int{"k": 1, "s": 2, "q": 4, "i": 8, "dm": 16, "e": 32, "t": 64, "o": 128, "g": 256, "p": 512, "v": 1024, "m": 2048, "x": 4096}

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

// str reads a string without escapes or control characters (valid
// UTF-8 is left to the caller's fallback: invalid bytes are refused).
func (p *fastParser) str() (string, bool) {
	if !p.lit('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false // escapes and non-ASCII: encoding/json's rules
		}
	}
	return "", false
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
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

func (p *fastParser) uint() (uint64, bool) {
	b, ok := p.number()
	if !ok || b[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
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
	}
	return 0
}

// object returns the bytes of a JSON object value whose strings carry no
// escapes (so braces inside strings are the only ones to skip).
func (p *fastParser) object() ([]byte, bool) {
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
				raw := p.b[start:p.i]
				return raw, json.Valid(raw)
			}
		}
	}
	return nil, false
}
