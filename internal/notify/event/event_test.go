package event

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func sampleParams() Params {
	return Params{
		Type:        ObjectCreatedPut,
		Time:        time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("x", 3600)),
		Region:      "default",
		User:        "tester",
		SourceIP:    "127.0.0.1",
		RequestID:   "req-1",
		HostID:      "gw1",
		Bucket:      "bk1",
		BucketOwner: "owner1",
		BucketID:    "b-123",
		Key:         "dir/year=2020/my file+x.jpg",
		Size:        1024,
		ETag:        `"37b51d194a7513e45b56f6524f2d51f2"`,
		VersionID:   "v1",
		Sequencer:   0x0123456789ABCDEF,
		Metadata:    map[string]string{"x-amz-meta-b": "2", "x-amz-meta-a": "1"},
		Tags:        map[string]string{"t": "v"},
		EventID:     "ev-1",
	}
}

// The exact JSON receivers get: field names, nesting and value forms.
func TestRecordJSONShape(t *testing.T) {
	r := New(sampleParams()).ForConfiguration("notif1", "me@example.com")
	b, err := MarshalMessage(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Records":[{"eventVersion":"2.2","eventSource":"ceph:s3","awsRegion":"default",` +
		`"eventTime":"2026-03-04T04:06:07.891Z","eventName":"ObjectCreated:Put",` +
		`"userIdentity":{"principalId":"tester"},"requestParameters":{"sourceIPAddress":"127.0.0.1"},` +
		`"responseElements":{"x-amz-request-id":"req-1","x-amz-id-2":"gw1"},` +
		`"s3":{"s3SchemaVersion":"1.0","configurationId":"notif1",` +
		`"bucket":{"name":"bk1","ownerIdentity":{"principalId":"owner1"},"arn":"arn:aws:s3:default::bk1","id":"b-123"},` +
		`"object":{"key":"dir/year%3D2020/my+file%2Bx.jpg","size":1024,"eTag":"37b51d194a7513e45b56f6524f2d51f2",` +
		`"versionId":"v1","sequencer":"0123456789ABCDEF",` +
		`"metadata":[{"key":"x-amz-meta-a","val":"1"},{"key":"x-amz-meta-b","val":"2"}],` +
		`"tags":[{"key":"t","val":"v"}]}},"eventId":"ev-1","opaqueData":"me@example.com"}]}`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}

func TestEmptyListsAreArrays(t *testing.T) {
	p := sampleParams()
	p.Metadata, p.Tags, p.EventID = nil, nil, ""
	b, err := Marshal(New(p))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"metadata":[],"tags":[]`) {
		t.Fatalf("want empty arrays, got %s", b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if id := m["eventId"].(string); len(id) != 32 {
		t.Fatalf("generated eventId %q", id)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	r := New(sampleParams()).ForConfiguration("c", "o")
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Marshal(got)
	if string(b) != string(b2) {
		t.Fatalf("round trip differs:\n%s\n%s", b, b2)
	}
	if got.ObjectKey() != "dir/year=2020/my file+x.jpg" {
		t.Fatalf("ObjectKey = %q", got.ObjectKey())
	}
	if got.Type() != ObjectCreatedPut {
		t.Fatalf("Type = %q", got.Type())
	}
}

func TestUnmarshalRejects(t *testing.T) {
	for _, in := range []string{
		``, `{}`, `{"eventVersion":"2.1","eventName":"x","bogus":1}`,
		`{"eventVersion":"2.1","eventName":"x"} {}`, `{"eventVersion":"2.1","eventName":"x","eventTime":"yesterday"}`,
	} {
		if _, err := Unmarshal([]byte(in)); err == nil {
			t.Errorf("Unmarshal(%q) succeeded", in)
		}
	}
	// RGW's microsecond timestamps are accepted.
	r, err := Unmarshal([]byte(`{"eventVersion":"2.1","eventName":"ObjectCreated:Put","eventTime":"2019-11-22T13:47:35.124724Z"}`))
	if err != nil || r.EventTime.Nanosecond() != 124724000 {
		t.Fatalf("rgw time: %v %v", r, err)
	}
}

func TestForConfigurationCopies(t *testing.T) {
	base := New(sampleParams())
	a := base.ForConfiguration("a", "oa")
	a.S3.Object.Tags[0].Val = "changed"
	if base.S3.Object.Tags[0].Val != "v" || base.S3.ConfigurationID != "" {
		t.Fatal("ForConfiguration shares memory with the base record")
	}
}

func TestEncodeKey(t *testing.T) {
	for raw, enc := range map[string]string{
		"plain.txt":       "plain.txt",
		"a b/c":           "a+b/c",
		"k=v/x":           "k%3Dv/x",
		"ü&?#%":           "%C3%BC%26%3F%23%25",
		"a+b":             "a%2Bb",
		"dir/sub dir/f~1": "dir/sub+dir/f~1",
	} {
		if got := EncodeKey(raw); got != enc {
			t.Errorf("EncodeKey(%q) = %q, want %q", raw, got, enc)
		}
		if back, err := DecodeKey(enc); err != nil || back != raw {
			t.Errorf("DecodeKey(%q) = %q, %v", enc, back, err)
		}
	}
}

func TestTypeMatching(t *testing.T) {
	cases := []struct {
		pattern, ev Type
		want        bool
	}{
		{ObjectCreatedAll, ObjectCreatedPut, true},
		{ObjectCreatedAll, ObjectCreatedCompleteMultipartUpload, true},
		{ObjectCreatedAll, ObjectRemovedDelete, false},
		{ObjectCreatedPut, ObjectCreatedPut, true},
		{ObjectCreatedPut, ObjectCreatedPost, false},
		{ObjectRemovedAll, ObjectRemovedDeleteMarkerCreated, true},
		{ObjectLifecycleAll, ObjectLifecycleExpirationCurrent, true},
		{ObjectLifecycleExpirationAll, ObjectLifecycleTransitionCurrent, false},
		{ObjectCreatedAll, ObjectCreatedAll, true},
		{ObjectLifecycleAll, ObjectLifecycleExpirationAll, false},
	}
	for _, c := range cases {
		if got := c.pattern.Matches(c.ev); got != c.want {
			t.Errorf("%s.Matches(%s) = %v", c.pattern, c.ev, got)
		}
	}
	if _, err := ParseType("s3:ObjectCreated:Put"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"ObjectCreated:Put", "s3:ObjectCreated:Get", "s3:*", ""} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) accepted", bad)
		}
	}
	if ObjectRemovedDeleteMarkerCreated.Name() != "ObjectRemoved:DeleteMarkerCreated" {
		t.Fatal("Name keeps the prefix")
	}
	if len(KnownTypes()) < 8 {
		t.Fatal("KnownTypes too short")
	}
}

func TestSequencerFormat(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xF, 0x10, 0x0123456789ABCDEF, 0xFEDCBA9876543210, math.MaxUint64} {
		if got, want := FormatSequencer(v), fmt.Sprintf("%016X", v); got != want {
			t.Errorf("FormatSequencer(%#x) = %q, want %q", v, got, want)
		}
	}
	if s := FormatSequencer(1); s != "0000000000000001" {
		t.Fatal(s)
	}
	v, err := ParseSequencer("00000000000000FF")
	if err != nil || v != 255 {
		t.Fatal(v, err)
	}
	for _, bad := range []string{"FF", "000000000000000G", "00000000000000000"} {
		if _, err := ParseSequencer(bad); err == nil {
			t.Errorf("ParseSequencer(%q) accepted", bad)
		}
	}
}

// Strictly increasing even when the wall clock steps back or stalls, and
// string order equals numeric order.
func TestClockMonotonic(t *testing.T) {
	wall := time.Unix(1_700_000_000, 0)
	c := NewClock(func() time.Time { return wall })
	prev := c.Next()
	prevS := FormatSequencer(prev)
	for i := 0; i < 1000; i++ {
		switch i % 3 {
		case 0:
			wall = wall.Add(-time.Second) // clock steps back
		case 1:
			wall = wall.Add(time.Microsecond)
		}
		v := c.Next()
		s := FormatSequencer(v)
		if v <= prev || s <= prevS {
			t.Fatalf("step %d: %s after %s", i, s, prevS)
		}
		prev, prevS = v, s
	}
}

// A lagging gateway's clock still produces a larger sequencer for a key
// whose previous event came from a gateway ahead in time.
func TestClockNextAfter(t *testing.T) {
	ahead := NewClock(func() time.Time { return time.Unix(2_000_000_000, 0) })
	behind := NewClock(func() time.Time { return time.Unix(1_000_000_000, 0) })
	s1 := ahead.Next()
	s2 := behind.NextAfter(s1)
	if s2 <= s1 {
		t.Fatalf("%x <= %x", s2, s1)
	}
	if s3 := behind.Next(); s3 <= s2 {
		t.Fatalf("clock did not catch up: %x <= %x", s3, s2)
	}
}

func TestClockConcurrent(t *testing.T) {
	c := NewClock(nil)
	const n, g = 2000, 8
	out := make(chan uint64, n*g)
	done := make(chan struct{})
	for i := 0; i < g; i++ {
		go func() {
			for j := 0; j < n; j++ {
				out <- c.Next()
			}
			done <- struct{}{}
		}()
	}
	for i := 0; i < g; i++ {
		<-done
	}
	close(out)
	seen := map[uint64]bool{}
	for v := range out {
		if seen[v] {
			t.Fatalf("duplicate %x", v)
		}
		seen[v] = true
	}
}

func FuzzUnmarshal(f *testing.F) {
	b, _ := Marshal(New(sampleParams()))
	f.Add(b)
	f.Add([]byte(`{"eventVersion":"2.1","eventName":"x"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkOrderingKey(t, in)
		r, err := Unmarshal(in)
		if err != nil {
			return
		}
		out, err := Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Unmarshal(out); err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
	})
}

// BenchmarkNew is the record build of every notified write (-cpu 1).
func BenchmarkNew(b *testing.B) {
	p := sampleParams()
	p.EventID = "fixed"
	b.ReportAllocs()
	for b.Loop() {
		New(p)
	}
}

// Empty metadata and tags encode as [] and cost no allocation (sort.Slice
// boxed the empty slice: two per list, four per record).
func TestSortedKVEmpty(t *testing.T) {
	if kv := sortedKV(nil); kv == nil || len(kv) != 0 {
		t.Fatalf("sortedKV(nil) = %#v, want []KV{}", kv)
	}
	if n := testing.AllocsPerRun(100, func() { _ = sortedKV(map[string]string{}) }); n != 0 {
		t.Fatalf("%.0f allocations for an empty map", n)
	}
}
