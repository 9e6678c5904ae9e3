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
)

// Object part kinds, after the object prefix.
const (
	partData   = 'd' // d <chunk index u32 BE> → chunk bytes
	partHeader = 'h' // h                      → omap header
	partOmap   = 'm' // m <key>                → omap value
	partXattr  = 'x' // x <name>               → xattr value
)

const chunkSize = 64 << 10

var (
	sysEpoch    = []byte("Sepoch")
	sysNextPool = []byte("Snext-pool-id")
	sysFormat   = []byte("Sformat")
)

const formatVersion = 1

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
func objPrefix(pool uint64, ns, oid string) []byte {
	b := make([]byte, 0, 11+len(ns)+len(oid))
	b = append(u64(append(b, kObj), pool), ns...)
	b = append(b, 0)
	b = append(b, oid...)
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
//	[0]     format (1)
//	[1:9]   version   u64 BE
//	[9:17]  size      u64 BE
//	[17:25] mtime     i64 BE, Unix nanoseconds
//	[25:33] blob id   u64 BE, 0 = data inline in chunks
type meta struct {
	version uint64
	size    int64
	mtime   int64
	blob    uint64
}

const metaLen = 33

func (m meta) encode() []byte {
	b := make([]byte, 1, metaLen)
	b[0] = 1
	b = u64(b, m.version)
	b = u64(b, uint64(m.size))
	b = u64(b, uint64(m.mtime))
	return u64(b, m.blob)
}

func decodeMeta(b []byte) (meta, error) {
	if len(b) != metaLen || b[0] != 1 {
		return meta{}, objstore.Errorf(objstore.ErrInvalid, "embedded: corrupt object meta (%d bytes)", len(b))
	}
	be := binary.BigEndian
	return meta{
		version: be.Uint64(b[1:]),
		size:    int64(be.Uint64(b[9:])),
		mtime:   int64(be.Uint64(b[17:])),
		blob:    be.Uint64(b[25:]),
	}, nil
}

func (m meta) stat() objstore.Stat {
	return objstore.Stat{Size: m.size, ModTime: time.Unix(0, m.mtime), Version: m.version}
}
