package embedded

import (
	"encoding/binary"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Key spaces (first byte). The layout is specified in docs/format/embedded.md.
// Names (pool, namespace, object, xattr, omap key) never contain NUL, which
// objstore validates, so a 0x00 terminator is unambiguous and keeps byte
// order equal to name order.
const (
	kSys    = 'S' // S <name>                                  → system value
	kPool   = 'P' // P <pool name>                             → pool id (u64 BE)
	kMeta   = 'M' // M <pool id> <ns> 00 <oid>                 → object meta
	kObj    = 'O' // O <pool id> <ns> 00 <oid> 00 <kind> ...   → object parts
	kBlobRf = 'B' // B <blob id>                               → M key of the owner
	kView   = 'V' // V <pool id> <ns> 00 <view> 00 <key>        → value (objstore.Viewer)
)

// Object part kinds, after the object prefix.
const (
	partData   = 'd' // d <chunk index u32 BE> → chunk bytes
	partHeader = 'h' // h                      → omap header
	partOmap   = 'm' // m <key>                → omap value
	partView   = 'v' // v                      → a view member's view (meta format 4)
	partXattr  = 'x' // x <name>               → xattr value
)

const chunkSize = 64 << 10

var (
	sysEpoch    = []byte("Sepoch")
	sysNextPool = []byte("Snext-pool-id")
	sysFormat   = []byte("Sformat")
)

// formatVersion is written at every Open. 2 added ordered views (V keys,
// meta format 2), 3 their projections (meta format 3), 4 the view part
// (meta format 4); an older directory reads unchanged and is marked 4, so
// that older builds refuse it instead of meeting records they cannot
// read.
const formatVersion = 4

func u64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func poolKey(name string) []byte { return append([]byte{kPool}, name...) }

// nsPrefix is M <pool> <ns> 00: every meta key of a namespace.
func nsPrefix(pool uint64, ns string) []byte {
	b := make([]byte, 0, 10+len(ns))
	b = append(u64(append(b, kMeta), pool), ns...)
	return append(b, 0)
}

func metaKey(pool uint64, ns, oid string) []byte {
	return append(nsPrefix(pool, ns), oid...)
}

// objPrefix is O <pool> <ns> 00 <oid> 00: every part of one object.
func objPrefix(pool uint64, ns, oid string) []byte { return namedPrefix(kObj, pool, ns, oid) }

// namedPrefix is <k> <pool> <ns> 00 <name> 00.
func namedPrefix(k byte, pool uint64, ns, name string) []byte {
	b := make([]byte, 0, 11+len(ns)+len(name))
	b = append(u64(append(b, k), pool), ns...)
	b = append(b, 0)
	b = append(b, name...)
	return append(b, 0)
}

// objNsPrefix is O <pool> <ns> 00: every part of every object of a
// namespace.
func objNsPrefix(pool uint64, ns string) []byte {
	b := make([]byte, 0, 10+len(ns))
	b = append(u64(append(b, kObj), pool), ns...)
	return append(b, 0)
}

// poolSpan returns [lo, hi) covering every key of kind k for a pool.
func poolSpan(k byte, pool uint64) (lo, hi []byte) {
	return u64([]byte{k}, pool), u64([]byte{k}, pool+1)
}

// viewPrefix is V <pool> <ns> 00 <view> 00: every key of one view.
func viewPrefix(pool uint64, ns, view string) []byte { return namedPrefix(kView, pool, ns, view) }

func blobRefKey(id uint64) []byte { return u64([]byte{kBlobRf}, id) }

// succ returns the smallest key greater than every key with prefix p, or
// nil when there is none (p all 0xff).
func succ(p []byte) []byte {
	out := append([]byte(nil), p...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] != 0xff {
			out[i]++
			return out[:i+1]
		}
	}
	return nil
}

// meta is an object's record under its M key.
//
//	[0]     format (1; 4 for a view member; 2 and 3 as earlier builds wrote them)
//	[1:9]   version   u64 BE
//	[9:17]  size      u64 BE
//	[17:25] mtime     i64 BE, Unix nanoseconds
//	[25:33] blob id   u64 BE, 0 = data inline in chunks
//	format 2: uvarint length, view name, uvarint length, view bound
//	format 3: format 2's, then uvarint length, view projection
//	format 4: no more: the view, bound and projection are in the object's
//	          v part (encodeView), written only when they change
//
// The meta is written at every op on the object; a bucket index shard's
// view names (bucket id, bound, projection: ~50 bytes) were most of it.
type meta struct {
	version uint64
	size    int64
	mtime   int64
	blob    uint64
	// The ordered view the object's omap writes keep (objstore.Viewer),
	// "" for none, the bound below which keys are copied ("" = all), and
	// the projection of their values ("" = the values themselves).
	view, below, proj string
	// viewPart: the object's v part holds view, below and proj (a format
	// 4 meta); else a commit of a member writes it.
	viewPart bool
}

const metaLen = 33

func (m meta) encode() []byte {
	b := make([]byte, 1, metaLen)
	b[0] = 1
	if m.view != "" {
		b[0] = 4
	}
	b = u64(b, m.version)
	b = u64(b, uint64(m.size))
	b = u64(b, uint64(m.mtime))
	return u64(b, m.blob)
}

// decodeMeta decodes a meta record; a format 4 record's view fields are
// left for the caller to read from the v part (decodeView).
func decodeMeta(b []byte) (meta, error) {
	bad := objstore.Errorf(objstore.ErrInvalid, "embedded: corrupt object meta (%d bytes)", len(b))
	if len(b) < metaLen || b[0] < 1 || b[0] > 4 || (b[0] == 1 || b[0] == 4) && len(b) != metaLen {
		return meta{}, bad
	}
	be := binary.BigEndian
	m := meta{
		version:  be.Uint64(b[1:]),
		size:     int64(be.Uint64(b[9:])),
		mtime:    int64(be.Uint64(b[17:])),
		blob:     be.Uint64(b[25:]),
		viewPart: b[0] == 4,
	}
	if b[0] == 2 || b[0] == 3 {
		var err error
		if m.view, m.below, m.proj, err = decodeViewFields(b[metaLen:], int(b[0])); err != nil || b[0] == 3 && m.proj == "" {
			return meta{}, bad
		}
	}
	return m, nil
}

// encodeView is the v part of a view member: the view's name, its bound
// and its projection, each a uvarint length and the bytes (format 3's
// tail).
func (m meta) encodeView() []byte {
	b := make([]byte, 0, 3+len(m.view)+len(m.below)+len(m.proj))
	b = append(binary.AppendUvarint(b, uint64(len(m.view))), m.view...)
	b = append(binary.AppendUvarint(b, uint64(len(m.below))), m.below...)
	return append(binary.AppendUvarint(b, uint64(len(m.proj))), m.proj...)
}

// decodeView sets m's view fields from its v part.
func (m *meta) decodeView(b []byte) error {
	var err error
	if m.view, m.below, m.proj, err = decodeViewFields(b, 3); err != nil {
		return objstore.Errorf(objstore.ErrInvalid, "embedded: corrupt view part (%d bytes)", len(b))
	}
	return nil
}

// decodeViewFields reads n (2 or 3) length-prefixed strings, all of b:
// the view (not empty), its bound and, for 3, its projection ("" = none).
func decodeViewFields(rest []byte, n int) (view, below, proj string, err error) {
	var strs [3]string
	for i := range strs[:n] {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return "", "", "", objstore.ErrInvalid
		}
		strs[i], rest = string(rest[k:k+int(l)]), rest[k+int(l):]
	}
	if len(rest) != 0 || strs[0] == "" {
		return "", "", "", objstore.ErrInvalid
	}
	return strs[0], strs[1], strs[2], nil
}

func (m meta) stat() objstore.Stat {
	return objstore.Stat{Size: m.size, ModTime: time.Unix(0, m.mtime), Version: m.version}
}
