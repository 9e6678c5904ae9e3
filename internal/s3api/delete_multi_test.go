package s3api

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

type deleteResultXML struct {
	Deleted []struct{ Key string }
	Error   []struct{ Key, Code, Message string }
}

func TestDeleteObjects(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	for _, k := range []string{"a", "b", "c d"} {
		h.put("b", strings.ReplaceAll(k, " ", "%20"), "x")
	}
	body := `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a</Key></Object><Object><Key>c d</Key></Object><Object><Key>missing</Key></Object><Object><Key>b</Key><VersionId>v9</VersionId></Object></Delete>`
	sum := md5.Sum([]byte(body))
	res := h.mustDo(req{method: "POST", path: "/b?delete", body: body, hdr: map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(sum[:])}}, 200)
	var out deleteResultXML
	if err := xml.Unmarshal([]byte(res.body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Deleted) != 3 || out.Deleted[0].Key != "a" || out.Deleted[1].Key != "c d" || out.Deleted[2].Key != "missing" ||
		len(out.Error) != 1 || out.Error[0].Key != "b" || out.Error[0].Code != "NoSuchVersion" {
		t.Fatalf("%s", res.body)
	}
	if objs := h.be.buckets["b"].objects; len(objs) != 1 || objs["b"] == nil {
		t.Fatalf("left %v", objs)
	}
	// Quiet: only errors are listed.
	quiet := `<Delete><Quiet>true</Quiet><Object><Key>b</Key></Object></Delete>`
	res = h.mustDo(req{method: "POST", path: "/b?delete", body: quiet, hdr: contentMD5(quiet)}, 200)
	out = deleteResultXML{}
	xml.Unmarshal([]byte(res.body), &out)
	if len(out.Deleted) != 0 || len(out.Error) != 0 || len(h.be.buckets["b"].objects) != 0 {
		t.Fatalf("quiet: %s", res.body)
	}

	var many strings.Builder
	many.WriteString("<Delete>")
	for i := 0; i < 1001; i++ {
		fmt.Fprintf(&many, "<Object><Key>k%d</Key></Object>", i)
	}
	many.WriteString("</Delete>")
	h.put("b", "keep", "x")
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		code       string
	}{
		{"malformed", "<Delete><Object>", nil, "MalformedXML"},
		{"empty", "", nil, "MalformedXML"},
		{"no objects", "<Delete></Delete>", nil, "MalformedXML"},
		{"wrong root", "<Remove><Object><Key>keep</Key></Object></Remove>", nil, "MalformedXML"},
		{"too many", many.String(), nil, "MalformedXML"},
		{"bad md5", "<Delete><Object><Key>keep</Key></Object></Delete>", map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(make([]byte, 16))}, "BadDigest"},
		{"bad crc32", "<Delete><Object><Key>keep</Key></Object></Delete>", map[string]string{"x-amz-checksum-crc32": "AAAAAA=="}, "BadDigest"},
		// S3 requires an integrity check on DeleteObjects.
		{"no digest", "<Delete><Object><Key>keep</Key></Object></Delete>", map[string]string{}, "InvalidRequest"},
	} {
		if tc.hdr == nil {
			tc.hdr = contentMD5(tc.body)
		}
		res := h.mustDo(req{method: "POST", path: "/b?delete", body: tc.body, hdr: tc.hdr}, 400)
		if res.code() != tc.code {
			t.Errorf("%s: %s", tc.name, res.body)
		}
	}
	if h.be.buckets["b"].objects["keep"] == nil {
		t.Fatal("a rejected DeleteObjects deleted a key")
	}
}

func contentMD5(body string) map[string]string {
	sum := md5.Sum([]byte(body))
	return map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(sum[:])}
}

// A checksum header instead of Content-MD5 is enough (what current SDKs
// send).
func TestDeleteObjectsChecksumHeader(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.put("b", "k", "x")
	body := "<Delete><Object><Key>k</Key></Object></Delete>"
	sum := crc32.ChecksumIEEE([]byte(body))
	enc := base64.StdEncoding.EncodeToString([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
	h.mustDo(req{method: "POST", path: "/b?delete", body: body, hdr: map[string]string{"x-amz-checksum-crc32": enc}}, 200)
	if len(h.be.buckets["b"].objects) != 0 {
		t.Fatal("not deleted")
	}
	// AWS names x-amz-sdk-checksum-algorithm as the alternative to
	// Content-MD5.
	h.put("b", "k", "x")
	h.mustDo(req{method: "POST", path: "/b?delete", body: body, hdr: map[string]string{"x-amz-sdk-checksum-algorithm": "CRC32"}}, 200)
	if len(h.be.buckets["b"].objects) != 0 {
		t.Fatal("not deleted")
	}
}
