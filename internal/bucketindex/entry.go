package bucketindex

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// Entry is one object's index record: the bucket index is authoritative for
// an object's existence (an S3 object exists iff its entry does), and the
// entry names the data objects that hold its bytes.
type Entry struct {
	Key  string `json:"k"`
	Size int64  `json:"s"`
	// Seq is the key's version sequence, assigned by link_version (newest
	// = highest). 0 marks a legacy entry written by plain link, which is
	// the key's only (null) version. Kept right after Size: entrySizeSeq
	// reads both without decoding the entry.
	Seq       uint64          `json:"q,omitempty"`
	VersionID string          `json:"i,omitempty"`  // "" legacy, "null", or an opaque id
	Marker    bool            `json:"dm,omitempty"` // a delete marker (version records only)
	ETag      string          `json:"e"`
	ModTime   time.Time       `json:"t"`
	Owner     string          `json:"o,omitempty"`
	Tag       string          `json:"g"` // unique per write; names the data
	Parts     int             `json:"p,omitempty"`
	Version   uint64          `json:"v,omitempty"` // shard version at link time: per-key sequencer input
	Manifest  Manifest        `json:"m"`
	Meta      json.RawMessage `json:"x,omitempty"` // driver.ObjectMeta, opaque here
	// Class is the version's storage class ("" = STANDARD); its runs name
	// the pools that hold the data.
	Class string `json:"sc,omitempty"`
}

// Manifest lists the data objects of an object: runs of stripes. A plain PUT
// has one run; a multipart object has one run per part.
type Manifest struct {
	Runs []Run `json:"r,omitempty"`
}

// Run is Size bytes stored as stripes of StripeSize bytes in objects
// Prefix, Prefix.1, Prefix.2, ... (the first stripe keeps the bare name).
//
// An encrypted run (Enc, docs/format/sse.md) stores Plain bytes of
// plaintext as Size bytes of packages; sizes seen by S3 come from DataSize.
type Run struct {
	Prefix     string `json:"p"`
	Size       int64  `json:"s"`
	StripeSize int64  `json:"z"`
	Enc        bool   `json:"c,omitempty"`
	Plain      int64  `json:"ps,omitempty"`
	// Pool is the data pool holding the stripes ("" = the default data
	// pool, default.rgw.buckets.data): storage classes place data in
	// pools of their own, and a transition moves a run to another pool.
	Pool string `json:"l,omitempty"`
	// KeyName is the name an encrypted run's key was derived from when it
	// differs from Prefix (a run copied by a transition keeps its
	// ciphertext under a new name); "" = Prefix.
	KeyName string `json:"kn,omitempty"`
	// Inline: the run's bytes are Data, held in the entry itself; no
	// data object exists (a small GET reads one key, a small PUT writes
	// one, and nothing is left to collect when the version goes).
	// Size = len(Data); StripeSize is 0.
	Inline bool   `json:"n,omitempty"`
	Data   []byte `json:"d,omitempty"`
}

// Stored reports whether the run's bytes live in data objects.
func (r Run) Stored() bool { return !r.Inline }

// Same reports whether a and b describe the same run.
func (r Run) Same(o Run) bool {
	return r.Prefix == o.Prefix && r.Size == o.Size && r.StripeSize == o.StripeSize &&
		r.Enc == o.Enc && r.Plain == o.Plain && r.Pool == o.Pool && r.KeyName == o.KeyName &&
		r.Inline == o.Inline && bytes.Equal(r.Data, o.Data)
}

// KeyPrefix is the name an encrypted run's key derives from.
func (r Run) KeyPrefix() string {
	if r.KeyName != "" {
		return r.KeyName
	}
	return r.Prefix
}

// DataSize is the run's size as the object's bytes: Plain when encrypted.
func (r Run) DataSize() int64 {
	if r.Enc {
		return r.Plain
	}
	return r.Size
}

// StripeOID names stripe i of a run.
func (r Run) StripeOID(i int64) string {
	if i == 0 {
		return r.Prefix
	}
	return r.Prefix + "." + strconv.FormatInt(i, 10)
}

// NumStripes is the number of stripe objects in the run (at least 1;
// none for an inline run).
func (r Run) NumStripes() int64 {
	if r.Inline {
		return 0
	}
	if r.Size == 0 || r.StripeSize == 0 {
		return 1
	}
	return (r.Size + r.StripeSize - 1) / r.StripeSize
}

// Stored reports whether any run of m lives in data objects (what a
// replaced version leaves for the collector).
func (m Manifest) Stored() bool {
	for _, r := range m.Runs {
		if r.Stored() {
			return true
		}
	}
	return false
}

// StoredOnly is m without its inline runs: what the collector needs.
func (m Manifest) StoredOnly() Manifest {
	if !slices.ContainsFunc(m.Runs, func(r Run) bool { return r.Inline }) {
		return m
	}
	return Manifest{Runs: slices.DeleteFunc(slices.Clone(m.Runs), func(r Run) bool { return r.Inline })}
}

// Objects lists every data object of the manifest (inline runs have none).
func (m Manifest) Objects() []string {
	var out []string
	for _, r := range m.Runs {
		for i := int64(0); i < r.NumStripes(); i++ {
			out = append(out, r.StripeOID(i))
		}
	}
	return out
}

// Layout is a bucket's index layout: generation and shard count. A reshard
// builds generation Gen+1 and switches to it.
type Layout struct {
	Gen       uint64 `json:"gen"`
	NumShards int    `json:"num_shards"`
	// View: the shards keep an ordered view of their entries (an
	// embedded-store objstore.Viewer named by the bucket id), and an
	// ordered listing reads it instead of merging every shard. Set when
	// the bucket is created on a backend with views; kept across
	// reshards (the targets join at the switch).
	View bool `json:"view,omitempty"`
}

// ShardOID names a shard object: .dir.<bucket_id>.<gen>.<shard> (RGW's name).
func ShardOID(bucketID string, gen uint64, shard int) string {
	return ".dir." + bucketID + "." + strconv.FormatUint(gen, 10) + "." + strconv.Itoa(shard)
}

// ShardOf maps a key to its shard: FNV-1a 64 of the key modulo n. Fixed
// forever: changing it would misplace every existing entry.
func ShardOf(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// Omap key space of a shard object. Object keys are valid UTF-8, which never
// contains the byte 0xff, so every special record sorts after every entry
// (docs/format/cls.md has the byte layout).
const (
	specialPrefix = "\xff"
	gcPrefix      = "\xffg/" // data awaiting collection: tag → Manifest
	intentPrefix  = "\xffi/" // a link's pending notification: tag → caller's bytes
	logPrefix     = "\xffl/" // reshard log: seq → logged op
	logEnd        = "\xffl0" // first key after the log ('/'+1)
	nullPrefix    = "\xffn/" // <escaped key> → {"k":key,"q":seq of the null version}
	verPrefix     = "\xffv/" // <escaped key> 0x01 0x01 <16 hex of ^seq> → Entry
	verEnd        = "\xffv0"
)

// Stats is a shard's (or a bucket's) object count and bytes: current,
// visible objects (the bare entries ListObjects returns) and every stored
// version (legacy entries, version records and delete markers).
type Stats struct {
	NumObjects  uint64 `json:"num_objects"`
	Size        uint64 `json:"size"`
	NumVersions uint64 `json:"num_versions"`
	VersionSize uint64 `json:"versions_size"`
	// Legacy counts bare entries written by plain link (Seq 0): the only
	// entries ListVersions must find outside the version records.
	Legacy uint64 `json:"-"`
}

func (s *Stats) add(o Stats) {
	s.NumObjects += o.NumObjects
	s.Size += o.Size
	s.NumVersions += o.NumVersions
	s.VersionSize += o.VersionSize
	s.Legacy += o.Legacy
}

// shardHeader is the shard's omap header, little-endian u64s: objects,
// size, reshard log sequence, then versions, versions' size and legacy
// entries (absent in headers written before versioning: a shard then
// holds only legacy entries, each its key's only version), then the
// stats of each storage class other than STANDARD (absent before storage
// classes: none). docs/format/cls.md has the layout.
type shardHeader struct {
	Stats
	LogSeq uint64
	// Classes are the stats of the entries of each non-STANDARD class,
	// sorted by name; a class whose counts all reach 0 is dropped, so
	// the header stays 48 bytes while a shard holds only STANDARD data.
	Classes []ClassStats
}

// ClassStats is the share of one storage class in a Stats (Legacy unused).
type ClassStats struct {
	Class string
	Stats
}

// maxClassName bounds a class name in the header (one length byte).
const maxClassName = 255

func decodeHeader(b []byte) (shardHeader, error) {
	var h shardHeader
	if len(b) == 0 {
		return h, nil
	}
	if len(b) < 24 {
		return h, objstore.Errorf(objstore.ErrInvalid, "index shard header of %d bytes", len(b))
	}
	h.NumObjects = binary.LittleEndian.Uint64(b)
	h.Size = binary.LittleEndian.Uint64(b[8:])
	h.LogSeq = binary.LittleEndian.Uint64(b[16:])
	if len(b) < 48 {
		h.NumVersions, h.VersionSize, h.Legacy = h.NumObjects, h.Size, h.NumObjects
		return h, nil
	}
	h.NumVersions = binary.LittleEndian.Uint64(b[24:])
	h.VersionSize = binary.LittleEndian.Uint64(b[32:])
	h.Legacy = binary.LittleEndian.Uint64(b[40:])
	for p := b[48:]; len(p) > 0; {
		n := int(p[0])
		if n == 0 || len(p) < 1+n+32 {
			return h, objstore.Errorf(objstore.ErrInvalid, "index shard header: bad class record at byte %d", len(b)-len(p))
		}
		c := ClassStats{Class: string(p[1 : 1+n])}
		q := p[1+n:]
		c.NumObjects = binary.LittleEndian.Uint64(q)
		c.Size = binary.LittleEndian.Uint64(q[8:])
		c.NumVersions = binary.LittleEndian.Uint64(q[16:])
		c.VersionSize = binary.LittleEndian.Uint64(q[24:])
		h.Classes = append(h.Classes, c)
		p = q[32:]
	}
	return h, nil
}

func (h shardHeader) encode() []byte {
	n := 48
	for _, c := range h.Classes {
		n += 1 + len(c.Class) + 32
	}
	b := make([]byte, 48, n)
	binary.LittleEndian.PutUint64(b, h.NumObjects)
	binary.LittleEndian.PutUint64(b[8:], h.Size)
	binary.LittleEndian.PutUint64(b[16:], h.LogSeq)
	binary.LittleEndian.PutUint64(b[24:], h.NumVersions)
	binary.LittleEndian.PutUint64(b[32:], h.VersionSize)
	binary.LittleEndian.PutUint64(b[40:], h.Legacy)
	for _, c := range h.Classes {
		b = append(b, byte(len(c.Class)))
		b = append(b, c.Class...)
		b = binary.LittleEndian.AppendUint64(b, c.NumObjects)
		b = binary.LittleEndian.AppendUint64(b, c.Size)
		b = binary.LittleEndian.AppendUint64(b, c.NumVersions)
		b = binary.LittleEndian.AppendUint64(b, c.VersionSize)
	}
	return b
}

// addClass adds (sign 1) or removes (sign -1) objects/versions and their
// bytes to class's counters. A removal never takes a counter below 0: a
// class entry linked by a gateway that predates class stats (or counted
// in a header it rewrote) was counted as STANDARD, and a reshard, which
// recounts every entry, makes the shard exact again.
func (h *shardHeader) addClass(class []byte, objs, size, vers, vsize uint64, sign int64) {
	i := 0
	for ; i < len(h.Classes) && h.Classes[i].Class < string(class); i++ {
	}
	if i == len(h.Classes) || h.Classes[i].Class != string(class) {
		if sign < 0 {
			return
		}
		h.Classes = append(h.Classes, ClassStats{})
		copy(h.Classes[i+1:], h.Classes[i:])
		h.Classes[i] = ClassStats{Class: string(class)}
	}
	c := &h.Classes[i].Stats
	if sign > 0 {
		c.NumObjects += objs
		c.Size += size
		c.NumVersions += vers
		c.VersionSize += vsize
		return
	}
	sub := func(v *uint64, d uint64) { *v -= min(*v, d) }
	sub(&c.NumObjects, objs)
	sub(&c.Size, size)
	sub(&c.NumVersions, vers)
	sub(&c.VersionSize, vsize)
	if *c == (Stats{}) {
		h.Classes = append(h.Classes[:i], h.Classes[i+1:]...)
	}
}
