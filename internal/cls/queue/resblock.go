package queue

import (
	"errors"
	"math/bits"
	"sort"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/wire"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Reservation blocks.
//
// A reservation was one omap key ("r" <id>), set by reserve and deleted by
// commit or abort. With the gateway's pool (every commit op refills what
// it consumed) that was two memtable inserts and two WAL records per
// event. Now the reservations one call makes share a key: "b" <16 hex
// last id> holds a run of up to blockMax consecutive ids with one size,
// one creation time and a bitmap of the ids still open. A commit clears
// its ids' bits (one rewrite per block a call touches) and deletes a block
// when its last bit goes. Ids, sizes, ages, the header's accounting and
// every method's contract are unchanged; "r" keys left by earlier binaries
// are still committed, aborted, expired and counted
// (docs/format/cls.md).

const (
	blockPrefix = "b"
	blockMax    = 64 // ids per block: the open bitmap is one uint64
)

func blockKey(last uint64) string { return prefixed(blockPrefix[0], last) }

// resBlock is ids first … first+n-1, each of bytes and entries, made at
// created; bit i of open is set while id first+i is reserved.
type resBlock struct {
	first          uint64
	n              int
	bytes, entries uint64
	created        time.Time
	open           uint64
}

func (b *resBlock) last() uint64          { return b.first + uint64(b.n) - 1 }
func (b *resBlock) covers(id uint64) bool { return id >= b.first && id <= b.last() }
func (b *resBlock) isOpen(id uint64) bool { return b.covers(id) && b.open&(1<<(id-b.first)) != 0 }
func (b *resBlock) openCount() uint64     { return uint64(bits.OnesCount64(b.open)) }
func (b *resBlock) res() reservation {
	return reservation{bytes: b.bytes, entries: b.entries, created: b.created}
}
func (b *resBlock) key() string { return blockKey(b.last()) }
func fullMask(n int) uint64     { return ^uint64(0) >> (64 - uint(n)) }
func newBlock(first uint64, n int, r reservation) resBlock {
	return resBlock{first: first, n: n, bytes: r.bytes, entries: r.entries, created: r.created, open: fullMask(n)}
}

// block value v1: n, bytes, entries (uvarints), created (unix ns varint),
// open (uvarint bitmap, bit i = id last-n+1+i).
func (b *resBlock) encode() []byte {
	return wire.NewEnc(1, 40).Uvarint(uint64(b.n)).Uvarint(b.bytes).Uvarint(b.entries).Time(b.created).Uvarint(b.open).B
}

func decodeBlock(key string, v []byte) (resBlock, error) {
	last, err := ParseMarker(key[len(blockPrefix):])
	if err != nil {
		return resBlock{}, err
	}
	d, _ := wire.NewDec(v, 1, "queue reservation block")
	n := d.Uvarint()
	b := resBlock{bytes: d.Uvarint(), entries: d.Uvarint(), created: d.Time(), open: d.Uvarint()}
	if err := d.Err(); err != nil {
		return resBlock{}, err
	}
	if n == 0 || n > blockMax || n-1 > last || b.open&^fullMask(int(n)) != 0 {
		return resBlock{}, objstore.Errorf(objstore.ErrInvalid, "queue reservation block %q: %d ids, open %x", key, n, b.open)
	}
	b.n, b.first = int(n), last-(n-1)
	return b, nil
}

// The block cache (class cache slot resCacheSlot) holds blocks this
// process wrote, so a commit on the PUT's path reads no omap (on RADOS a
// round trip). It is partial: a cached block is authoritative for the ids
// it covers (a deleted one is kept in the overlay with no open id until
// the next fold); an id no cached block covers is looked up in the omap.
// Every class path that changes a block replaces or removes it here
// (expire drops all); the backend drops the slot on any other change.
// Values are immutable: a change makes a new value, copying only a short
// overlay of changes and folding it into a new base every resOverlayMax.
const (
	resCacheSlot  = "2pc_queue.blocks"
	resCacheMax   = 256 // blocks in the base; more are simply not cached
	resOverlayMax = 32
)

type blockCache struct {
	base []resBlock // by first, disjoint, each with an open id
	ovl  []resBlock // later versions, newest last; open 0: deleted
}

// find returns the cached block covering id.
func (c *blockCache) find(id uint64) (resBlock, bool) {
	if c == nil {
		return resBlock{}, false
	}
	for i := len(c.ovl) - 1; i >= 0; i-- {
		if c.ovl[i].covers(id) {
			return c.ovl[i], true
		}
	}
	i := sort.Search(len(c.base), func(i int) bool { return c.base[i].last() >= id })
	if i < len(c.base) && c.base[i].covers(id) {
		return c.base[i], true
	}
	return resBlock{}, false
}

// with returns a cache with each of chs stored (removed when none of its
// ids is open); c is unchanged.
func (c *blockCache) with(chs []resBlock) *blockCache {
	if c == nil {
		c = &blockCache{}
	}
	if len(c.ovl)+len(chs) <= resOverlayMax {
		ovl := make([]resBlock, 0, len(c.ovl)+len(chs))
		return &blockCache{base: c.base, ovl: append(append(ovl, c.ovl...), chs...)}
	}
	out := make([]resBlock, 0, len(c.base)+len(c.ovl)+len(chs))
	out = append(out, c.base...)
	for _, b := range append(append([]resBlock(nil), c.ovl...), chs...) {
		i := sort.Search(len(out), func(i int) bool { return out[i].first >= b.first })
		has := i < len(out) && out[i].first == b.first
		switch {
		case b.open == 0 && has:
			out = append(out[:i], out[i+1:]...)
		case b.open == 0:
		case has:
			out[i] = b
		case len(out) < resCacheMax:
			out = append(out, resBlock{})
			copy(out[i+1:], out[i:])
			out[i] = b
		}
	}
	return &blockCache{base: out}
}

func cachedBlocks(ctx objstore.MethodContext) *blockCache {
	if v, ok := ctx.Cached(resCacheSlot); ok {
		c, _ := v.(*blockCache)
		return c
	}
	return nil
}

// resSet is one method call's view of the reservations it touches: blocks
// come from the cache or the omap, change in memory, and flush writes each
// changed block once.
type resSet struct {
	ctx     objstore.MethodContext
	cache   *blockCache
	blocks  []*setBlock
	legacy  map[uint64]*legacyRes // "r" keys read (pre-block data)
	gone    []string              // "r" keys consumed
	changed bool
}

type setBlock struct {
	b      resBlock
	stored bool // its key exists in the omap
	dirty  bool
}

type legacyRes struct {
	r    reservation
	open bool
}

func newResSet(ctx objstore.MethodContext) *resSet {
	return &resSet{ctx: ctx, cache: cachedBlocks(ctx)}
}

// get returns id's reservation if it is open; it does not consume it.
func (s *resSet) get(id uint64) (reservation, bool, error) {
	sb, err := s.block(id)
	if err != nil {
		return reservation{}, false, err
	}
	if sb != nil {
		return sb.b.res(), sb.b.isOpen(id), nil
	}
	if l, ok := s.legacy[id]; ok {
		return l.r, l.open, nil
	}
	b, err := s.ctx.GetOmapVal(resKey(id))
	if errors.Is(err, objstore.ErrNotFound) {
		return reservation{}, false, nil
	}
	if err != nil {
		return reservation{}, false, err
	}
	r, err := decodeReservation(b)
	if err != nil {
		return reservation{}, false, err
	}
	if s.legacy == nil {
		s.legacy = map[uint64]*legacyRes{}
	}
	s.legacy[id] = &legacyRes{r: r, open: true}
	return r, true, nil
}

// consume releases open id (commit or abort); get must have found it.
func (s *resSet) consume(id uint64) {
	for _, sb := range s.blocks {
		if sb.b.isOpen(id) {
			sb.b.open &^= 1 << (id - sb.b.first)
			sb.dirty = true
			s.changed = true
			return
		}
	}
	if l, ok := s.legacy[id]; ok && l.open {
		l.open = false
		s.gone = append(s.gone, resKey(id))
		s.changed = true
	}
}

// block returns the block covering id (from this call, the cache or the
// omap), or nil when none does (an "r" key's id, or an unknown one).
func (s *resSet) block(id uint64) (*setBlock, error) {
	for _, sb := range s.blocks {
		if sb.b.covers(id) {
			return sb, nil
		}
	}
	if b, ok := s.cache.find(id); ok {
		sb := &setBlock{b: b, stored: true}
		s.blocks = append(s.blocks, sb)
		return sb, nil
	}
	after := blockPrefix // the first block whose last id is >= id
	if id > 0 {
		after = blockKey(id - 1)
	}
	kvs, _, err := s.ctx.GetOmapVals(after, blockPrefix, 1)
	if err != nil || len(kvs) == 0 {
		return nil, err
	}
	b, err := decodeBlock(kvs[0].Key, kvs[0].Value)
	if err != nil || !b.covers(id) {
		return nil, err
	}
	sb := &setBlock{b: b, stored: true}
	s.blocks = append(s.blocks, sb)
	return sb, nil
}

// add makes n reservations r with consecutive ids from first, in blocks
// of up to blockMax.
func (s *resSet) add(first uint64, n uint64, r reservation) {
	for n > 0 {
		k := min(n, blockMax)
		s.blocks = append(s.blocks, &setBlock{b: newBlock(first, int(k), r), dirty: true})
		first += k
		n -= k
	}
	s.changed = true
}

// flush writes the changed blocks (a block with no open id is deleted) and
// the consumed "r" keys, and stages the cache.
func (s *resSet) flush() error {
	if !s.changed {
		return nil
	}
	var sets []objstore.KV
	rm := s.gone
	var chs []resBlock
	for _, sb := range s.blocks {
		if !sb.dirty {
			continue
		}
		switch {
		case sb.b.open != 0:
			sets = append(sets, objstore.KV{Key: sb.b.key(), Value: sb.b.encode()})
		case sb.stored:
			rm = append(rm, sb.b.key())
		}
		chs = append(chs, sb.b)
	}
	if len(sets) > 0 {
		if err := s.ctx.SetOmap(sets...); err != nil {
			return err
		}
	}
	if len(rm) > 0 {
		if err := s.ctx.RmOmapKeys(rm...); err != nil {
			return err
		}
	}
	if len(chs) > 0 {
		s.ctx.SetCached(resCacheSlot, s.cache.with(chs))
	}
	return nil
}
