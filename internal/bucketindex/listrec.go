package bucketindex

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// A listing record is the compact form the listing projection gives an
// entry (docs/format/cls.md, "The listing projection"): the listing's
// fields in binary, without the key (the view's omap key is the entry's
// key) and with a plain PUT's ETag as 16 bytes. It starts with
// listingRecord, which no JSON value starts with, so a view holding JSON
// members written by earlier builds reads beside it.
const listingRecord = 0x01

// Flags of a listing record (its second byte): which optional fields
// follow.
const (
	lrMarker    = 1 << iota // a delete marker (no field)
	lrHexETag               // the ETag begins with 32 lowercase hex digits, stored as 16 bytes
	lrSeq                   // the version sequence
	lrVersionID             // the version id
	lrOwner                 // the owner
	lrParts                 // the part count
	lrClass                 // the storage class
	lrMeta                  // the driver's metadata (it holds an ACL): the record's rest
)

func isListingRecord(b []byte) bool { return len(b) > 0 && b[0] == listingRecord }

// appendListingRecord returns the listing record of entry JSON b whose
// omap key is key, or false when the record would not decode to what a
// listing decodes from b (then the projection keeps JSON): a member k
// other than key, a string with escapes or non-ASCII bytes, a time that is
// not UTC as json.Marshal writes it, a number out of the fast parser's
// range, a repeated member, or a kept Meta that is not a JSON object.
// Members a listing does not read (g, m, v, unknown names, a Meta without
// an ACL) are skipped as filterMembers skips them, so that the JSON it
// falls back to projects to itself.
func appendListingRecord(key string, b []byte) ([]byte, bool) {
	p := fastParser{b: b}
	if !p.lit('{') {
		return nil, false
	}
	var (
		flags                         byte
		size, parts, sec              int64
		nsec                          int
		seq                           uint64
		vid, etag, owner, class, meta []byte
		seen                          int
	)
	if !p.lit('}') {
		for {
			start := p.i
			end, ok := skipString(b, start)
			if !ok || end >= len(b) || b[end] != ':' {
				return nil, false
			}
			p.i = end + 1
			bit := entryFieldBit(b[start+1 : end-1])
			if bit&(fieldTag|fieldVersion|fieldManifest) != 0 {
				bit = 0 // dropped: skipped below whatever it holds
			}
			// A Meta counts only when kept: filterMembers drops one
			// without an ACL, however often it comes.
			if bit != 0 && bit != fieldMeta {
				if seen&bit != 0 {
					return nil, false
				}
				seen |= bit
			}
			switch bit {
			case fieldKey:
				ok = p.keyIs(key)
			case fieldSize:
				size, ok = p.int()
			case fieldSeq:
				seq, ok = p.uint()
			case fieldVersionID:
				vid, ok = p.span()
			case fieldMarker:
				var m bool
				if m, ok = p.bool(); m {
					flags |= lrMarker
				}
			case fieldETag:
				etag, ok = p.span()
			case fieldModTime:
				var s []byte
				if s, ok = p.span(); ok {
					var t time.Time
					t, ok = utcTime(s)
					sec, nsec = t.Unix(), t.Nanosecond()
				}
			case fieldOwner:
				owner, ok = p.span()
			case fieldParts:
				parts, ok = p.int()
				ok = ok && int64(int(parts)) == parts
			case fieldClass:
				class, ok = p.span()
			default: // x, dropped and unknown members
				vstart := p.i
				p.i, ok = skipValue(b, vstart)
				if ok && bit == fieldMeta {
					if v := b[vstart:p.i]; bytes.Contains(v, []byte(MetaACLField)) {
						meta = v
						ok = seen&fieldMeta == 0 && v[0] == '{' && json.Valid(v)
						seen |= fieldMeta
					}
				}
			}
			if !ok {
				return nil, false
			}
			if p.lit('}') {
				break
			}
			if !p.lit(',') {
				return nil, false
			}
		}
	}
	if !p.end() || seen&fieldKey == 0 {
		return nil, false
	}
	if seen&fieldModTime == 0 {
		sec = time.Time{}.Unix()
	}
	hexETag := len(etag) >= 32 && lowerHex(etag[:32])
	for _, f := range [...]struct {
		on  bool
		bit byte
	}{{hexETag, lrHexETag}, {seq != 0, lrSeq}, {len(vid) > 0, lrVersionID}, {len(owner) > 0, lrOwner},
		{parts != 0, lrParts}, {len(class) > 0, lrClass}, {meta != nil, lrMeta}} {
		if f.on {
			flags |= f.bit
		}
	}
	out := make([]byte, 2, 32+len(vid)+len(etag)+len(owner)+len(class)+len(meta))
	out[0], out[1] = listingRecord, flags
	out = binary.AppendVarint(out, size)
	if flags&lrSeq != 0 {
		out = binary.AppendUvarint(out, seq)
	}
	if flags&lrVersionID != 0 {
		out = appendStr(out, vid)
	}
	if hexETag {
		out, _ = hex.AppendDecode(out, etag[:32])
		etag = etag[32:]
	}
	out = appendStr(out, etag)
	out = binary.AppendVarint(out, sec)
	out = binary.AppendUvarint(out, uint64(nsec))
	if flags&lrOwner != 0 {
		out = appendStr(out, owner)
	}
	if flags&lrParts != 0 {
		out = binary.AppendVarint(out, parts)
	}
	if flags&lrClass != 0 {
		out = appendStr(out, class)
	}
	return append(out, meta...), true
}

func appendStr(b, s []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }

func lowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// keyIs reads a string and reports whether it is key, as encoding/json
// would decode it.
func (p *fastParser) keyIs(key string) bool {
	start := p.i
	end, ok := skipString(p.b, start)
	if !ok {
		return false
	}
	p.i = end
	s := p.b[start+1 : end-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		var k string
		return json.Unmarshal(p.b[start:end], &k) == nil && k == key
	}
	for _, c := range s {
		if c < 0x20 {
			return false // not JSON: left to the decoders to refuse
		}
	}
	return string(s) == key && utf8.Valid(s)
}

// decodeListingRecord decodes listing record b of the entry under omap key
// key into *e (zero): Meta aliases b, and the strings share one
// allocation.
func decodeListingRecord(e *Entry, b []byte, key string) error {
	return decodeListingRecordKey(e, b, key, nil)
}

// decodeListingRecordKey is decodeListingRecord with the key as key, or,
// when key is "", as keyb, copied into the strings' one allocation (a view
// cursor's key is pebble's memory).
func decodeListingRecordKey(e *Entry, b []byte, key string, keyb []byte) error {
	r := recReader{b: b, i: 2}
	if len(b) < 2 || b[0] != listingRecord {
		return objstore.Errorf(objstore.ErrInvalid, "index listing record of %d bytes", len(b))
	}
	flags := b[1]
	e.Key = key // or keyb, below
	e.Marker = flags&lrMarker != 0
	e.Size = r.varint()
	if flags&lrSeq != 0 {
		e.Seq = r.uvarint()
	}
	var vid, etagHex, etag, owner, class []byte
	if flags&lrVersionID != 0 {
		vid = r.str()
	}
	if flags&lrHexETag != 0 {
		etagHex = r.bytes(16)
	}
	etag = r.str()
	sec := r.varint()
	nsec := r.uvarint()
	if flags&lrOwner != 0 {
		owner = r.str()
	}
	if flags&lrParts != 0 {
		n := r.varint()
		e.Parts = int(n)
		if int64(e.Parts) != n {
			r.bad = true
		}
	}
	if flags&lrClass != 0 {
		class = r.str()
	}
	if flags&lrMeta != 0 {
		if r.i >= len(b) {
			r.bad = true
		} else {
			e.Meta = b[r.i:len(b):len(b)]
		}
	} else if r.i != len(b) {
		r.bad = true
	}
	if r.bad || nsec >= 1e9 {
		return objstore.Errorf(objstore.ErrInvalid, "index listing record of key %q is corrupt", key)
	}
	e.ModTime = time.Unix(sec, int64(nsec)).UTC()
	if key != "" {
		keyb = nil
	}
	var sb strings.Builder
	sb.Grow(len(keyb) + len(vid) + 2*len(etagHex) + len(etag) + len(owner) + len(class))
	sb.Write(keyb)
	sb.Write(vid)
	var hx [32]byte
	hex.Encode(hx[:], etagHex)
	sb.Write(hx[:2*len(etagHex)])
	sb.Write(etag)
	sb.Write(owner)
	sb.Write(class)
	all := sb.String()
	off := 0
	cut := func(n int) string { s := all[off : off+n]; off += n; return s }
	if keyb != nil {
		e.Key = cut(len(keyb))
	}
	e.VersionID = cut(len(vid))
	e.ETag = cut(2*len(etagHex) + len(etag))
	e.Owner = cut(len(owner))
	e.Class = cut(len(class))
	return nil
}

// recReader reads a listing record's fields; a short or malformed field
// sets bad.
type recReader struct {
	b   []byte
	i   int
	bad bool
}

func (r *recReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[min(r.i, len(r.b)):])
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.i += n
	return v
}

func (r *recReader) varint() int64 {
	v, n := binary.Varint(r.b[min(r.i, len(r.b)):])
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.i += n
	return v
}

func (r *recReader) bytes(n int) []byte {
	if r.bad || n > len(r.b)-r.i {
		r.bad = true
		return nil
	}
	r.i += n
	return r.b[r.i-n : r.i]
}

func (r *recReader) str() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	return r.bytes(int(n))
}
