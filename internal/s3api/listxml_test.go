package s3api

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// hostileKeys are keys and values that exercise every escaping rule of
// encoding/xml.
var hostileKeys = []string{
	"", "plain/key.txt", `a&b<c>d"e'f`, "tab\tnl\ncr\r", "ctl\x00\x01\x1f\x7f",
	"bad utf8 \xff\xfe \xc3", "truncated \xe2\x82", "ключ/日本語/🙂", "\uFFFD literal",
	"\ufffe\uffff nonchars", "surrogate \xed\xa0\x80", "]]><![CDATA[", "&amp;&#34;",
	strings.Repeat("k/<&>", 205),
}

func goldenResults(key string) (*listBucketResultV1, *listBucketResultV2) {
	objs := []objectXML{
		{Key: key, LastModified: "2026-11-26T06:30:00.123Z", ETag: `"` + key + `"`, Size: 12, StorageClass: "STANDARD"},
		{Key: "x" + key, LastModified: key, ETag: `"e-3"`, Size: -1, StorageClass: key, Owner: &owner{ID: key, DisplayName: "D&" + key}},
		{Key: "z", ETag: `""`},
	}
	cps := []commonPrefix{{Prefix: key + "/"}, {Prefix: ""}}
	v1 := &listBucketResultV1{Xmlns: s3Namespace, Name: "b" + key, Prefix: key, Marker: key, NextMarker: key, MaxKeys: 1000,
		Delimiter: key, EncodingType: key, IsTruncated: key != "", Contents: objs, CommonPrefixes: cps}
	v2 := &listBucketResultV2{Xmlns: s3Namespace, Name: "b", Prefix: key, StartAfter: key, ContinuationToken: key,
		NextContinuationToken: key, KeyCount: 5, MaxKeys: 0, Delimiter: key, EncodingType: key, IsTruncated: key == "", Contents: objs, CommonPrefixes: cps}
	return v1, v2
}

// The hand-written listing XML is byte for byte xml.Marshal's, on hostile
// keys and on empty pages.
func TestListXMLGolden(t *testing.T) {
	check := func(name string, got []byte, v any) {
		t.Helper()
		want, err := xml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	for _, k := range hostileKeys {
		v1, v2 := goldenResults(k)
		check("v1 "+k, marshalListV1(v1), v1)
		check("v2 "+k, marshalListV2(v2), v2)
	}
	for _, k := range hostileKeys {
		v := goldenVersions(k)
		check("versions "+k, marshalListVersions(v), v)
	}
	check("empty versions", marshalListVersions(&listVersionsResult{}), &listVersionsResult{})
	check("empty v1", marshalListV1(&listBucketResultV1{}), &listBucketResultV1{})
	check("empty v2", marshalListV2(&listBucketResultV2{}), &listBucketResultV2{})
}

func goldenVersions(key string) *listVersionsResult {
	sz, zero := int64(77), int64(0)
	return &listVersionsResult{Xmlns: s3Namespace, Name: key, Prefix: key, KeyMarker: key, VersionIDMarker: key,
		NextKeyMarker: key, NextVersionIDMarker: key, MaxKeys: 7, Delimiter: key, EncodingType: key, IsTruncated: true,
		Entries: []versionEntry{
			{XMLName: xml.Name{Local: "Version"}, Key: key, VersionID: "null", IsLatest: true, LastModified: key, ETag: `"` + key + `"`, Size: &sz, StorageClass: key, Owner: ownerView{ID: key, DisplayName: key}},
			{XMLName: xml.Name{Local: "DeleteMarker"}, Key: key, VersionID: key, LastModified: "t"},
			{XMLName: xml.Name{Local: "Version"}, Key: "k", Size: &zero},
		},
		CommonPrefixes: []commonPrefixV{{Prefix: key}}}
}

func FuzzListXML(f *testing.F) {
	for _, k := range hostileKeys {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		v1, v2 := goldenResults(key)
		for _, c := range []struct {
			got []byte
			v   any
		}{{marshalListV1(v1), v1}, {marshalListV2(v2), v2}, {marshalListVersions(goldenVersions(key)), goldenVersions(key)}} {
			want, err := xml.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.got, want) {
				t.Fatalf("%q:\n got %q\nwant %q", key, c.got, want)
			}
		}
	})
}
