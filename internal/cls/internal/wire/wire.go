// Package wire is the compact encoding shared by the object classes' inputs,
// outputs and stored records (docs/format/cls.md).
//
// Every message starts with a one-byte format version, followed by fields in
// a fixed order: unsigned integers as uvarints, signed ones and times as
// zigzag varints, byte strings as a uvarint length and the bytes. Fields are
// only ever appended; a decoder ignores trailing bytes it does not know, so
// an old reader accepts a newer writer's message. The version byte changes
// only for an incompatible layout.
package wire

import (
	"encoding/binary"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Enc appends fields to a buffer.
type Enc struct{ B []byte }

// NewEnc starts a message of format version v with room for n bytes.
func NewEnc(v byte, n int) *Enc {
	e := &Enc{B: make([]byte, 0, n+1)}
	e.B = append(e.B, v)
	return e
}

func (e *Enc) Uvarint(v uint64) *Enc { e.B = binary.AppendUvarint(e.B, v); return e }
func (e *Enc) Varint(v int64) *Enc   { e.B = binary.AppendVarint(e.B, v); return e }
func (e *Enc) U8(v uint8) *Enc       { e.B = append(e.B, v); return e }
func (e *Enc) Bool(v bool) *Enc {
	if v {
		return e.U8(1)
	}
	return e.U8(0)
}
func (e *Enc) Bytes(b []byte) *Enc {
	e.B = binary.AppendUvarint(e.B, uint64(len(b)))
	e.B = append(e.B, b...)
	return e
}
func (e *Enc) String(s string) *Enc {
	e.B = binary.AppendUvarint(e.B, uint64(len(s)))
	e.B = append(e.B, s...)
	return e
}

// Time encodes t as Unix nanoseconds (zigzag varint); the zero time is 0.
func (e *Enc) Time(t time.Time) *Enc { return e.Varint(TimeNanos(t)) }

// TimeNanos is t in Unix nanoseconds, 0 for the zero time.
func TimeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// NanosTime inverts TimeNanos.
func NanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Dec reads fields. The first error sticks: check Err once at the end.
type Dec struct {
	b    []byte
	what string
	err  error
}

// NewDec checks the version byte (at most max is understood) and returns a
// decoder for the rest. what names the message in errors.
func NewDec(b []byte, max byte, what string) (*Dec, byte) {
	d := &Dec{b: b, what: what}
	if len(b) == 0 {
		d.fail("empty")
		return d, 0
	}
	v := b[0]
	if v == 0 || v > max {
		d.fail("unknown format version")
		return d, v
	}
	d.b = b[1:]
	return d, v
}

func (d *Dec) fail(why string) {
	if d.err == nil {
		d.err = objstore.Errorf(objstore.ErrInvalid, "decode %s: %s", d.what, why)
	}
	d.b = nil
}

// Err is the first decode error (ErrInvalid), or nil.
func (d *Dec) Err() error { return d.err }

// More reports whether unread bytes remain (optional trailing fields).
func (d *Dec) More() bool { return d.err == nil && len(d.b) > 0 }

func (d *Dec) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *Dec) Varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *Dec) U8() uint8 {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("short")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *Dec) Bool() bool { return d.U8() != 0 }

// Bytes returns a slice aliasing the input; copy it to keep it past the
// input's lifetime.
func (d *Dec) Bytes() []byte {
	n := d.Uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length past end")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *Dec) String() string { return string(d.Bytes()) }

func (d *Dec) Time() time.Time { return NanosTime(d.Varint()) }

// Count reads a uvarint element count and rejects one that cannot fit in the
// remaining bytes (each element takes at least minSize bytes), so a corrupt
// count cannot make the caller allocate unboundedly.
func (d *Dec) Count(minSize int) int {
	n := d.Uvarint()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(len(d.b)/minSize) {
		d.fail("count past end")
		return 0
	}
	return int(n)
}
