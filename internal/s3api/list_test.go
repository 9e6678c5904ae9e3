package s3api

import (
	"context"
	"encoding/xml"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

type listXML struct {
	Name                  string
	Prefix                string
	Marker                string
	NextMarker            string
	StartAfter            string
	ContinuationToken     string
	NextContinuationToken string
	KeyCount              int
	MaxKeys               int
	Delimiter             string
	EncodingType          string
	IsTruncated           bool
	Contents              []struct {
		Key, ETag, StorageClass string
		Size                    int64
		Owner                   *struct{ ID, DisplayName string }
	}
	CommonPrefixes []struct{ Prefix string }
}

func (l listXML) entries() []string {
	var out []string
	for _, c := range l.Contents {
		out = append(out, c.Key)
	}
	for _, p := range l.CommonPrefixes {
		out = append(out, p.Prefix+"(p)")
	}
	return out
}

var listKeys = []string{"a", "b/1", "b/2", "b/3/x", "c", "d/1", "e", "sp ace/1"}

func listHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.bucket("b")
	for _, k := range listKeys {
		h.put("b", (&url.URL{Path: k}).EscapedPath(), "x")
	}
	return h
}

func (h *harness) list(query string) listXML {
	h.t.Helper()
	res := h.mustDo(req{method: "GET", path: "/b?" + query}, 200)
	var l listXML
	if err := xml.Unmarshal([]byte(res.body), &l); err != nil {
		h.t.Fatal(err)
	}
	return l
}

func TestListObjects(t *testing.T) {
	h := listHarness(t)
	for _, tc := range []struct {
		query     string
		entries   []string
		truncated bool
		next      string // NextMarker (v1)
	}{
		{"", listKeys, false, ""},
		{"prefix=b/", []string{"b/1", "b/2", "b/3/x"}, false, ""},
		{"delimiter=/", []string{"a", "c", "e", "b/(p)", "d/(p)", "sp ace/(p)"}, false, ""},
		{"delimiter=/&prefix=b/", []string{"b/1", "b/2", "b/3/(p)"}, false, ""},
		{"delimiter=/&max-keys=2", []string{"a", "b/(p)"}, true, "b/"},
		{"delimiter=/&max-keys=2&marker=b/", []string{"c", "d/(p)"}, true, "d/"},
		{"max-keys=3", []string{"a", "b/1", "b/2"}, true, ""},
		{"marker=b/2", []string{"b/3/x", "c", "d/1", "e", "sp ace/1"}, false, ""},
		{"max-keys=0", nil, false, ""},
		{"max-keys=5000", listKeys, false, ""},
	} {
		l := h.list(tc.query)
		if !reflect.DeepEqual(l.entries(), tc.entries) || l.IsTruncated != tc.truncated || l.NextMarker != tc.next {
			t.Errorf("v1 %q: %v trunc=%v next=%q; want %v %v %q", tc.query, l.entries(), l.IsTruncated, l.NextMarker, tc.entries, tc.truncated, tc.next)
		}
		if strings.Contains(tc.query, "max-keys=5000") && l.MaxKeys != 1000 {
			t.Errorf("max-keys not capped: %d", l.MaxKeys)
		}
	}
	l := h.list("max-keys=1")
	if l.Name != "b" || l.Contents[0].Owner == nil || l.Contents[0].Owner.DisplayName != "Alice" || l.Contents[0].StorageClass != "STANDARD" {
		t.Fatalf("v1 entry: %+v", l)
	}
}

func TestListObjectsV2(t *testing.T) {
	h := listHarness(t)
	l := h.list("list-type=2&delimiter=/&max-keys=2")
	if !reflect.DeepEqual(l.entries(), []string{"a", "b/(p)"}) || !l.IsTruncated || l.KeyCount != 2 || l.NextContinuationToken == "" {
		t.Fatalf("page 1: %+v", l)
	}
	if l.Contents[0].Owner != nil {
		t.Fatal("owner without fetch-owner")
	}
	l2 := h.list("list-type=2&delimiter=/&max-keys=2&continuation-token=" + url.QueryEscape(l.NextContinuationToken))
	if !reflect.DeepEqual(l2.entries(), []string{"c", "d/(p)"}) || l2.ContinuationToken != l.NextContinuationToken {
		t.Fatalf("page 2: %+v", l2)
	}
	// Token wins over start-after; start-after alone works; fetch-owner.
	l3 := h.list("list-type=2&start-after=d/1&fetch-owner=true")
	if !reflect.DeepEqual(l3.entries(), []string{"e", "sp ace/1"}) || l3.StartAfter != "d/1" || l3.Contents[0].Owner == nil {
		t.Fatalf("start-after: %+v", l3)
	}
	// encoding-type=url encodes keys, prefixes and the delimiter as AWS
	// does ("/" stays, space and "+" escaped).
	l4 := h.list("list-type=2&encoding-type=url&prefix=sp%20&delimiter=%2B")
	if l4.EncodingType != "url" || len(l4.Contents) != 1 || l4.Contents[0].Key != "sp%20ace/1" || l4.Prefix != "sp%20" || l4.Delimiter != "%2B" {
		t.Fatalf("encoding: %+v", l4)
	}
	// V1 returns the prefix as sent (RGW), the rest encoded.
	l5 := h.list("encoding-type=url&prefix=sp%20&delimiter=%2B")
	if len(l5.Contents) != 1 || l5.Contents[0].Key != "sp%20ace/1" || l5.Prefix != "sp " || l5.Delimiter != "%2B" {
		t.Fatalf("v1 encoding: %+v", l5)
	}
	if got := encodeURLKey("a b+c/d%e\x01ü~"); got != "a%20b%2Bc/d%25e%01%C3%BC~" {
		t.Fatalf("encodeURLKey: %s", got)
	}
	// allow-unordered without a delimiter lists (in order here); empty
	// markers and start-after are no error.
	if l := h.list("allow-unordered=true&marker=&prefix=d/"); len(l.Contents) == 0 {
		t.Fatalf("allow-unordered: %+v", l)
	}
	h.list("list-type=2&start-after=")
	// An empty continuation token is no token: the first page.
	if l := h.list("list-type=2&continuation-token=&max-keys=1"); !reflect.DeepEqual(l.entries(), []string{"a"}) || l.ContinuationToken != "" {
		t.Fatalf("empty continuation token: %+v", l)
	}
	for _, tc := range []struct{ query, code string }{
		{"list-type=2&encoding-type=xml", "InvalidArgument"},
		{"list-type=2&max-keys=-1", "InvalidArgument"},
		{"list-type=2&max-keys=ten", "InvalidArgument"},
		{"list-type=2&continuation-token=%21%21", "InvalidArgument"},
		{"allow-unordered=true&delimiter=/", "InvalidArgument"},
		{"list-type=2&allow-unordered=true&delimiter=/", "InvalidArgument"},
		{"encoding-type=base64", "InvalidArgument"},
	} {
		if res := h.mustDo(req{method: "GET", path: "/b?" + tc.query}, 400); res.code() != tc.code {
			t.Errorf("%q: %s", tc.query, res.body)
		}
	}
}

// The SDK paginators walk every page exactly once.
func TestListPaginationSDK(t *testing.T) {
	h := listHarness(t)
	c := h.client(aliceKey)
	ctx := context.Background()
	for _, delim := range []string{"", "/"} {
		var got []string
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("b"), MaxKeys: aws.Int32(1), Delimiter: aws.String(delim)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				got = append(got, *o.Key)
			}
			for _, cp := range page.CommonPrefixes {
				got = append(got, *cp.Prefix)
			}
		}
		want := listKeys
		if delim != "" {
			want = []string{"a", "b/", "c", "d/", "e", "sp ace/"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("v2 delim %q: %v", delim, got)
		}
		// V1 by hand: NextMarker with a delimiter, else the last key.
		got, marker := nil, ""
		for {
			out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("b"), MaxKeys: aws.Int32(2), Delimiter: aws.String(delim), Marker: aws.String(marker)})
			if err != nil {
				t.Fatal(err)
			}
			last := ""
			for _, o := range out.Contents {
				got, last = append(got, *o.Key), *o.Key
			}
			for _, cp := range out.CommonPrefixes {
				got = append(got, *cp.Prefix)
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			marker = aws.ToString(out.NextMarker)
			if marker == "" {
				marker = last
			}
		}
		if delim != "" {
			want = []string{"a", "b/", "c", "d/", "e", "sp ace/"}
		}
		if len(got) != len(want) {
			t.Fatalf("v1 delim %q: %v", delim, got)
		}
	}
}
