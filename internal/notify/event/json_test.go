package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Pieces that exercise every escaping rule of encoding/json.
var oddPieces = []string{
	"", "a", "plain-key.txt", "dir/sub dir/", "\"", "\\", "<", ">", "&", "<script>&amp;</script>",
	"\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x1f", "\x7f", " ", "+", "%", "=",
	"é", "日本語", "🪨", "\u2028", "\u2029", "\ufffd", "\xff", "\xc3", "\xe2\x80", "a\xffb",
	"\xed\xa0\x80", // a UTF-16 surrogate as UTF-8: invalid
	"x-amz-meta-Key", "ключ", "\u200b", "\U0010ffff",
}

func oddString(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.IntN(5); n > 0; n-- {
		b.WriteString(oddPieces[rng.IntN(len(oddPieces))])
	}
	return b.String()
}

func oddKVs(rng *rand.Rand) map[string]string {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for n := 1 + rng.IntN(4); n > 0; n-- {
		m[oddString(rng)] = oddString(rng)
	}
	return m
}

func oddRecord(rng *rand.Rand) *Record {
	zones := []*time.Location{time.UTC, time.FixedZone("e", 5*3600+1800), time.FixedZone("w", -8*3600)}
	p := Params{
		Type:        []Type{ObjectCreatedPut, ObjectCreatedCopy, ObjectRemovedDelete, ObjectCreatedCompleteMultipartUpload}[rng.IntN(4)],
		Time:        time.Unix(rng.Int64N(1<<33), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))]),
		Source:      []string{"", oddString(rng)}[rng.IntN(2)],
		Region:      oddString(rng),
		User:        oddString(rng),
		SourceIP:    oddString(rng),
		RequestID:   oddString(rng),
		HostID:      oddString(rng),
		Tenant:      oddString(rng),
		Bucket:      oddString(rng),
		BucketOwner: oddString(rng),
		BucketID:    oddString(rng),
		Key:         oddString(rng),
		Size:        []int64{0, 1, 4096, -1, math.MaxInt64, math.MinInt64, rng.Int64()}[rng.IntN(7)],
		ETag:        oddString(rng),
		VersionID:   oddString(rng),
		Sequencer:   rng.Uint64(),
		Metadata:    oddKVs(rng),
		Tags:        oddKVs(rng),
		EventID:     oddString(rng),
	}
	r := New(p)
	if rng.IntN(2) == 0 {
		r = r.ForConfiguration(oddString(rng), oddString(rng)) // empty lists become nil
	}
	if rng.IntN(3) == 0 {
		// Fields New derives, set raw as a decoded foreign record could have them.
		r.EventName, r.S3.Object.Key, r.S3.Bucket.ARN = oddString(rng), oddString(rng), oddString(rng)
	}
	return r
}

// The hand-written encoder is encoding/json, byte for byte, on records
// with odd keys, unicode, invalid UTF-8, metadata and tags.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := []*Record{New(sampleParams()).ForConfiguration("notif1", "me@example.com"), {}}
	for range 5000 {
		recs = append(recs, oddRecord(rng))
	}
	for i, r := range recs {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSON(nil, r); !bytes.Equal(got, want) {
			t.Fatalf("record %d:\ngot  %s\nwant %s", i, got, want)
		}
		wantMsg, _ := json.Marshal(Message{Records: []*Record{r}})
		if got, _ := MarshalMessage(r); !bytes.Equal(got, wantMsg) {
			t.Fatalf("message %d:\ngot  %s\nwant %s", i, got, wantMsg)
		}
		stored, _ := Marshal(r)
		if got := WrapRecord([]byte("junk"), stored); !bytes.Equal(got[4:], wantMsg) {
			t.Fatalf("wrapped %d:\ngot  %s\nwant %s", i, got[4:], wantMsg)
		}
	}
	empty, _ := MarshalMessage()
	if want, _ := json.Marshal(Message{Records: []*Record{}}); !bytes.Equal(empty, want) {
		t.Fatalf("empty message %s, want %s", empty, want)
	}
}

// What a queue stores decodes and re-encodes to the same record, and to
// the same bytes unless the producer's strings held invalid UTF-8 (stored
// as the escape \ufffd, re-encoded as the character itself): so the
// delivery path may wrap stored bytes instead of re-encoding them.
func TestStoredRecordIsCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		r := oddRecord(rng)
		b, _ := Marshal(r)
		back, err := Unmarshal(b)
		if err != nil {
			if r.EventName == "" {
				continue // Unmarshal refuses records without eventName
			}
			t.Fatalf("record %d: %v\n%s", i, err, b)
		}
		again, _ := Marshal(back)
		if !bytes.Contains(b, []byte(`\ufffd`)) && !bytes.Equal(again, b) {
			t.Fatalf("record %d not canonical:\n%s\n%s", i, b, again)
		}
		back2, err := Unmarshal(again)
		if err != nil || !reflect.DeepEqual(back, back2) {
			t.Fatalf("record %d changed on re-encoding: %v\n%s\n%s", i, err, b, again)
		}
	}
}

func BenchmarkMarshalRecord(b *testing.B) {
	r := New(sampleParams()).ForConfiguration("notif1", "")
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := GetBuffer()
		defer PutBuffer(buf)
		for b.Loop() {
			*buf = AppendJSON((*buf)[:0], r)
		}
	})
}

// Unmarshal's fast path decodes exactly what encoding/json decodes, and
// declines (falling back to encoding/json) on anything else.
func TestDecodeCanonicalMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fast := 0
	check := func(i int, b []byte) {
		t.Helper()
		var want Record
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		werr := dec.Decode(&want)
		got, err := decodeCanonical(b)
		if err != nil {
			return // declined: Unmarshal uses encoding/json
		}
		fast++
		if werr != nil {
			t.Fatalf("record %d: fast path accepted what encoding/json refuses (%v):\n%s", i, werr, b)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("record %d:\nfast %+v\njson %+v\n%s", i, *got, want, b)
		}
	}
	for i := range 3000 {
		var r *Record
		if i%2 == 0 {
			r = oddRecord(rng)
		} else {
			p := sampleParams()
			p.Key = fmt.Sprintf("dir/obj-%d ü.txt", i)
			p.Metadata = map[string]string{"x-amz-meta-n": strconv.Itoa(i)}
			if i%3 == 0 {
				p.Metadata, p.Tags = nil, nil
			}
			r = New(p)
			if i%5 == 0 {
				r = r.ForConfiguration("c", "")
			}
		}
		b, _ := Marshal(r)
		check(i, b)
		checkOrderingKey(t, b)
		// Damaged copies: truncated, a byte changed, trailing bytes.
		tr := b[:rng.IntN(len(b))]
		check(i, tr)
		checkOrderingKey(t, tr)
		c := bytes.Clone(b)
		c[rng.IntN(len(c))] = "x0\":,{}[]-"[rng.IntN(10)]
		check(i, c)
		checkOrderingKey(t, c)
		c = append(bytes.Clone(b), ' ')
		check(i, c)
		checkOrderingKey(t, c)
	}
	if fast < 1500 {
		t.Fatalf("fast path taken only %d times", fast)
	}
}

func BenchmarkUnmarshalRecord(b *testing.B) {
	p := sampleParams()
	p.Key = "dir/obj-123.txt"
	data, _ := Marshal(New(p).ForConfiguration("notif1", ""))
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Record
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			_ = dec.Decode(&r)
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Unmarshal(data)
		}
	})
	b.Run("OrderingKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = OrderingKey(data)
		}
	})
}

// checkOrderingKey: OrderingKey accepts what Unmarshal accepts, refuses
// what it refuses (same error), and gives the key delivery used to build
// from the decoded record; it does not keep b (b is changed after).
func checkOrderingKey(t *testing.T, b []byte) {
	t.Helper()
	b = bytes.Clone(b)
	r, werr := Unmarshal(b)
	got, err := OrderingKey(b)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("OrderingKey error %v, Unmarshal %v:\n%q", err, werr, b)
	}
	if err != nil {
		return
	}
	want := r.S3.Bucket.Name + "/" + r.ObjectKey()
	for i := range b {
		b[i] = 'Z'
	}
	if got != want {
		t.Fatalf("OrderingKey %q, want %q", got, want)
	}
}

func TestOrderingKeyRejects(t *testing.T) {
	for _, in := range []string{
		``, `{}`, `{"eventVersion":"2.1","eventName":"x","bogus":1}`,
		`{"eventVersion":"2.1","eventName":"x"} {}`, `{"eventVersion":"2.1","eventName":"x","eventTime":"yesterday"}`,
	} {
		checkOrderingKey(t, []byte(in))
		if _, err := OrderingKey([]byte(in)); err == nil {
			t.Errorf("OrderingKey(%q) succeeded", in)
		}
	}
	// A canonical record without eventName: refused as Unmarshal refuses it.
	r := New(sampleParams())
	r.EventName = ""
	b, _ := Marshal(r)
	if _, err := decodeCanonical(b); err != nil {
		t.Fatal("not canonical: the test misses the fast path")
	}
	checkOrderingKey(t, b)
}

// Delivery reads every listed record's key: in place, one allocation (the
// key; two when the stored key has escapes to decode), where Unmarshal
// copies the record and builds a Record (5 here).
func TestOrderingKeyAllocs(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want float64
	}{{"dir/plain-key.txt", 1}, {"dir/a key+with=odd chars.txt", 2}} {
		p := sampleParams() // with metadata and tags
		p.Key = tc.key
		b, _ := Marshal(New(p).ForConfiguration("notif1", ""))
		if n := testing.AllocsPerRun(100, func() { _, _ = OrderingKey(b) }); n != tc.want {
			t.Errorf("OrderingKey(key %q): %.0f allocations, want %.0f", tc.key, n, tc.want)
		}
	}
}
