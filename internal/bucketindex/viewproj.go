package bucketindex

import "bytes"

// ListingProjection names the view projection the index's shards join
// with: the view keeps, of each entry, what a listing reads
// (docs/format/cls.md, "The listing projection"). Half an entry's bytes
// are its Tag, Manifest and Meta, which a listing never shows; without
// them the view costs a PUT fewer bytes to log, flush and compact, and a
// listing page spans fewer blocks.
const ListingProjection = ClassName + ".listing"

// MetaACLField is the JSON name under which an entry's Meta holds the
// object's ACL (the driver's ObjectMeta.ACL): a listing shows the ACL's
// owner, so the projection keeps a Meta that holds it. The rest of Meta
// stays opaque here.
const MetaACLField = `"acl"`

// projectListing is ListingProjection: the entry's listing record
// (appendListingRecord: its listing fields, without the key, binary), or,
// for an entry the record cannot hold exactly, its JSON with only the
// members k, s, q, i, dm, e, t, o, p and sc, and x when it may hold an
// ACL, in their order. It keeps anything it cannot read as a flat JSON
// object unchanged, and a projected entry projects to itself: a listing
// record is kept, and the JSON it falls back to fails the record again.
func projectListing(key string, val []byte) []byte {
	if isListingRecord(val) {
		return val
	}
	if out, ok := appendListingRecord(key, val); ok {
		return out
	}
	return projectListingJSON(val)
}

// projectListingJSON is the JSON projection (the only one before listing
// records): the listing's members of val.
func projectListingJSON(val []byte) []byte {
	if out, ok := filterMembers(val); ok {
		return out
	}
	return val
}

// listingMember reports whether member name (quotes included) with
// value v stays in the listing projection.
func listingMember(name, v []byte) bool {
	switch string(name) {
	case `"k"`, `"s"`, `"q"`, `"i"`, `"dm"`, `"e"`, `"t"`, `"o"`, `"p"`, `"sc"`:
		return true
	case `"x"`:
		return bytes.Contains(v, []byte(MetaACLField))
	}
	return false
}

// filterMembers copies the members of JSON object b that listingMember
// keeps. It checks structure, not grammar: only bytes the encoders wrote
// reach it, and a value it cannot delimit leaves b as it is.
func filterMembers(b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != '{' {
		return nil, false
	}
	out := make([]byte, 1, len(b))
	out[0] = '{'
	i := 1
	if b[i] == '}' {
		return append(out, '}'), len(b) == 2
	}
	for {
		start := i
		end, ok := skipString(b, i)
		if !ok || end >= len(b) || b[end] != ':' {
			return nil, false
		}
		name := b[start:end]
		vstart := end + 1
		vend, ok := skipValue(b, vstart)
		if !ok || vend >= len(b) {
			return nil, false
		}
		if listingMember(name, b[vstart:vend]) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, b[start:vend]...)
		}
		switch b[vend] {
		case ',':
			i = vend + 1
		case '}':
			if vend+1 != len(b) {
				return nil, false
			}
			return append(out, '}'), true
		default:
			return nil, false
		}
	}
}

// skipString returns the index after the JSON string at b[i].
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index after the JSON value at b[i]: a string, an
// object or array (brackets matched outside strings), or a scalar (up to
// the next ',', '}' or ']').
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i, i > start
}
