package driver

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodeLinkIntent writes what json.Marshal(linkIntent) wrote, odd keys
// included (quotes, HTML characters, control bytes, invalid UTF-8, U+2028).
func TestEncodeLinkIntentMatchesJSON(t *testing.T) {
	// n as the notifier encodes it: compact, HTML characters escaped
	// (Marshal would escape them while compacting).
	n := []byte(`{"v":1,"gw":"g","t":[{"q":"q\u003c\u0026\u003e","r":7}]}`)
	for _, key := range []string{"a", "", `say "hi"\`, "<b>&amp;</b>", "tab\there\x01", "bad\xffutf8", "line\u2028sep", "日本語/キー"} {
		for _, mt := range []int64{0, 1764190000123456789, -5} {
			want, err := json.Marshal(linkIntent{Key: key, MTime: mt, Notify: n})
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeLinkIntent(key, mt, n); !bytes.Equal(got, want) {
				t.Errorf("key %q mtime %d:\n got %s\nwant %s", key, mt, got, want)
			}
		}
	}
}
