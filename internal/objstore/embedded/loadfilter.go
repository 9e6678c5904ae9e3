package embedded

import (
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// leanBloom is the filter policy of loaded tables. It writes the filter
// bloom.FilterPolicy writes (RocksDB's full-filter format, read through
// that policy by its name), holding a table's key hashes in one slice
// sized to the table, where pebble's writer takes a 64 KiB block of them
// per table: a reshard's load keeps a writer open for every target shard
// (up to max-shards) while it stages a chunk of ~2,048 keys per target.
// TestLeanBloomMatchesPebble checks the output byte for byte.
type leanBloom int

var _ pebble.FilterPolicy = leanBloom(0)

func (p leanBloom) Name() string { return bloom.FilterPolicy(p).Name() }

func (p leanBloom) MayContain(t pebble.FilterType, filter, key []byte) bool {
	return bloom.FilterPolicy(p).MayContain(t, filter, key)
}

func (p leanBloom) NewWriter(pebble.FilterType) pebble.FilterWriter {
	return &leanBloomWriter{bits: int(p)}
}

type leanBloomWriter struct {
	bits   int
	hashes []uint32
}

func (w *leanBloomWriter) AddKey(key []byte) {
	h := bloomHash(key)
	if n := len(w.hashes); n > 0 && w.hashes[n-1] == h {
		return // a repeated key (its hash) sets the same bits
	}
	w.hashes = append(w.hashes, h)
}

// Finish appends the filter: the bits in 64-byte lines (an odd number of
// them, at least bits per key), then the probe count (1 byte) and the
// line count (4 bytes, little endian). Each key sets its probes within
// the one line its hash picks.
func (w *leanBloomWriter) Finish(dst []byte) []byte {
	const lineBytes = 64
	const lineBits = lineBytes * 8
	lines := 0
	if len(w.hashes) > 0 {
		lines = (len(w.hashes)*w.bits+lineBits-1)/lineBits | 1
	}
	n := lines * lineBytes
	off := len(dst)
	dst = append(dst, make([]byte, n+5)...)
	f := dst[off:]
	if lines > 0 {
		probes := bloomProbes(w.bits)
		for _, h := range w.hashes {
			delta := h>>17 | h<<15
			line := h % uint32(lines) * lineBits
			for range probes {
				bit := line + h%lineBits
				f[bit/8] |= 1 << (bit % 8)
				h += delta
			}
		}
		f[n] = byte(probes)
		binary.LittleEndian.PutUint32(f[n+1:], uint32(lines))
	}
	w.hashes = w.hashes[:0]
	return dst
}

// bloomProbes is the probe count for bits per key: bits × ln 2, rounded
// down, within [1, 30].
func bloomProbes(bits int) uint32 {
	return min(max(uint32(float64(bits)*0.69), 1), 30)
}

// bloomHash is LevelDB's filter hash (murmur-like, seed 0xbc9f1d34), with
// the tail bytes sign-extended as RocksDB's C++ does.
func bloomHash(b []byte) uint32 {
	const seed, m = 0xbc9f1d34, 0xc6a4a793
	h := uint32(seed) ^ uint32(len(b))*m
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b)
		h *= m
		h ^= h >> 16
	}
	switch len(b) {
	case 3:
		h += uint32(int8(b[2])) << 16
		fallthrough
	case 2:
		h += uint32(int8(b[1])) << 8
		fallthrough
	case 1:
		h += uint32(int8(b[0]))
		h *= m
		h ^= h >> 24
	}
	return h
}
