package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func TestRoundTrip(t *testing.T) {
	now := time.Unix(1700000000, 123).UTC()
	b := NewEnc(1, 0).Uvarint(300).Varint(-5).String("abc").Bytes(nil).Bool(true).Time(now).Time(time.Time{}).B
	d, v := NewDec(b, 1, "t")
	if v != 1 {
		t.Fatalf("version %d", v)
	}
	if d.Uvarint() != 300 || d.Varint() != -5 || d.String() != "abc" || len(d.Bytes()) != 0 || !d.Bool() {
		t.Fatal("field mismatch")
	}
	if got := d.Time(); !got.Equal(now) {
		t.Fatalf("time %v", got)
	}
	if !d.Time().IsZero() || d.More() || d.Err() != nil {
		t.Fatal("tail")
	}
}

func TestErrors(t *testing.T) {
	for _, b := range [][]byte{nil, {0}, {9}, {1, 0x80}, {1, 5, 'a'}} {
		d, _ := NewDec(b, 1, "t")
		d.Uvarint()
		d.Bytes()
		if !errors.Is(d.Err(), objstore.ErrInvalid) {
			t.Errorf("%x: err %v", b, d.Err())
		}
	}
	d, _ := NewDec([]byte{1, 200, 1}, 1, "t")
	if d.Count(1) != 0 || !errors.Is(d.Err(), objstore.ErrInvalid) {
		t.Fatal("count past end accepted")
	}
}

func FuzzDec(f *testing.F) {
	f.Add([]byte{1, 3, 'a', 'b', 'c', 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, _ := NewDec(b, 1, "f")
		for d.More() {
			n := d.Count(1)
			for i := 0; i < n; i++ {
				d.Bytes()
			}
			d.Varint()
		}
	})
}
