package reshard_test

import (
	"encoding/json"
	"math/rand"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
)

// The copy counts bytes with bucketindex.EntrySize, a scan instead of a
// decode; it must agree with the decode for any key, including keys that
// spell out the pattern it looks for.
func TestEntrySizeMatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	pieces := []string{`,"s":`, `"`, `\`, `,`, `s`, `:`, `{`, `}`, `7`, "é", "\u2028", "<>&", " ", `,"s":12,`}
	for i := 0; i < 5000; i++ {
		key := ""
		for n := rng.Intn(6) + 1; n > 0; n-- {
			key += pieces[rng.Intn(len(pieces))]
		}
		e := bucketindex.Entry{Key: key, Size: rng.Int63n(1 << 40), ETag: "x", ModTime: time.Unix(rng.Int63n(1e9), 0),
			Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: key, Size: 99, StripeSize: 4}}}, Meta: json.RawMessage(`{"s":5}`)}
		if i%7 == 0 {
			e.Size = 0
		}
		b, _ := json.Marshal(e)
		got, err := bucketindex.EntrySize(b)
		if err != nil || got != e.Size {
			t.Fatalf("EntrySize(%s) = %d, %v; want %d", b, got, err, e.Size)
		}
	}
	if _, err := bucketindex.EntrySize([]byte(`not json`)); err == nil {
		t.Fatal("garbage accepted")
	}
}
