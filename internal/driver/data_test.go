package driver_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// onlyWriter hides bytes.Buffer's ReadFrom, so io.Copy must use the
// reader's WriteTo (as it does with an HTTP response).
type onlyWriter struct{ b *bytes.Buffer }

func (w onlyWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

// GET streams stripes kept in blob files (on disk) through WriteTo and
// inline stripes through reads; every range must come out byte-exact,
// whichever way a reader consumes it.
func TestGetStreamsFileStripes(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	// Three stripes: two in blob files, a small inline tail.
	size := 2*driver.StripeSize + 1000
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(rand.Uint32())
	}
	put(t, d, "bkt", "obj", body)
	S := int64(driver.StripeSize)
	for _, r := range []*driver.Range{nil, {Start: 0, Length: 1}, {Start: S - 10, Length: 20}, {Start: 5, Length: 2*S + 990}, {Start: 2*S + 1, Length: 999}, {Start: S, Length: S}} {
		want := body
		if r != nil {
			want = body[r.Start : r.Start+r.Length]
		}
		for _, mode := range []string{"writeto", "read", "mixed"} {
			_, rd, err := d.GetObject(ctx, "bkt", "obj", r)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			switch mode {
			case "writeto":
				_, err = io.Copy(onlyWriter{&got}, rd)
			case "read":
				_, err = io.Copy(onlyWriter{&got}, struct{ io.Reader }{rd})
			case "mixed": // a short Read first, then WriteTo the rest
				p := make([]byte, 3)
				n, _ := rd.Read(p)
				got.Write(p[:n])
				_, err = io.Copy(onlyWriter{&got}, rd)
			}
			rd.Close()
			if err != nil || !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("range %+v, %s: %d bytes, want %d, err %v", r, mode, got.Len(), len(want), err)
			}
		}
	}
}
