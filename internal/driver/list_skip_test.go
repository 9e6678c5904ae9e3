package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

// TestListSkipsCommonPrefix: a delimiter listing over a common prefix that
// holds many keys (the view skips it with one seek, the merge with one
// read per shard) returns what the model says, from markers before,
// inside, at and after the prefix, page by page, from the view and from
// the merge, for ListObjects and ListObjectVersions (bare entries from
// before versioning and version records).
func TestListSkipsCommonPrefix(t *testing.T) {
	ctx := context.Background()
	var keys []string
	keys = append(keys, "a", "big", "big.", "big0", "c/1", "c/2", "z")
	for i := 0; i < 400; i++ {
		keys = append(keys, fmt.Sprintf("big/%04d", i))
	}
	keys = append(keys, "big/0300/deeper", "big//x")
	for _, view := range []bool{true, false} {
		d := newDriverOpts(t, driver.Options{DefaultShards: 3, NoIndexView: !view})
		if err := d.CreateBucket(ctx, "alice", "skip", "", 0); err != nil {
			t.Fatal(err)
		}
		// Each key's first version is written before versioning (a bare
		// entry, listed as the null version); every other key gets a
		// second after it (a version record; the bare entry becomes the
		// null record), so both kinds are many under big/.
		for v := 0; v < 2; v++ {
			if v == 1 {
				if err := d.PutBucketVersioning(ctx, "skip", "Enabled"); err != nil {
					t.Fatal(err)
				}
			}
			for i, k := range keys {
				if v == 1 && i%2 == 1 {
					continue
				}
				if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "skip", Key: k, Body: bytes.NewReader(nil)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		sorted := append([]string(nil), keys...)
		sort.Strings(sorted)
		for _, c := range []struct{ prefix, marker string }{
			{"", ""}, {"", "a"}, {"", "big"}, {"", "big/"}, {"", "big/0000"}, {"", "big/0300"},
			{"", "big/0399"}, {"", "big/\u00ff"}, {"", "big0"}, {"big/", ""}, {"big/", "big/0300"}, {"big/03", "big/0300"},
		} {
			// The model: keys after the marker under the prefix, each
			// key with the delimiter after the prefix folded into its
			// common prefix, which is not repeated and not the marker.
			var want []string
			for _, k := range sorted {
				if k <= c.marker || !strings.HasPrefix(k, c.prefix) {
					continue
				}
				if i := strings.Index(k[len(c.prefix):], "/"); i >= 0 {
					cp := k[:len(c.prefix)+i+1]
					if cp != c.marker && (len(want) == 0 || want[len(want)-1] != "P:"+cp) {
						want = append(want, "P:"+cp)
					}
					continue
				}
				want = append(want, "K:"+k)
			}
			for _, page := range []int{1, 3, 1000} {
				name := fmt.Sprintf("view %v prefix %q marker %q page %d", view, c.prefix, c.marker, page)
				var got []string
				marker := c.marker
				for pages := 0; ; pages++ {
					if pages > len(want)+1 {
						t.Fatalf("%s: the listing does not end", name)
					}
					res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "skip", Prefix: c.prefix, Delimiter: "/", StartAfter: marker, MaxKeys: page})
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, merged(res.Objects, res.CommonPrefixes)...)
					if !res.IsTruncated {
						break
					}
					marker = res.NextMarker
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: ListObjects\n got %v\nwant %v", name, got, want)
				}
				got = nil
				km, vm := c.marker, ""
				for pages := 0; ; pages++ {
					if pages > 2*len(want)+1 {
						t.Fatalf("%s: the version listing does not end", name)
					}
					res, err := d.ListObjectVersions(ctx, driver.ListVersionsInput{Bucket: "skip", Prefix: c.prefix, Delimiter: "/", KeyMarker: km, VersionIDMarker: vm, MaxKeys: page})
					if err != nil {
						t.Fatal(err)
					}
					var objs []driver.ListedObject
					for _, v := range res.Versions {
						// A key's versions: listed once in the model.
						if len(objs) == 0 || objs[len(objs)-1].Key != v.Key {
							if len(got) == 0 || got[len(got)-1] != "K:"+v.Key {
								objs = append(objs, v.Listed())
							}
						}
					}
					got = append(got, merged(objs, res.CommonPrefixes)...)
					if !res.IsTruncated {
						break
					}
					km, vm = res.NextKeyMarker, res.NextVersionIDMarker
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: ListObjectVersions\n got %v\nwant %v", name, got, want)
				}
			}
		}
	}
}

// merged is a page's objects and common prefixes in key order.
func merged(objs []driver.ListedObject, cps []string) []string {
	var out []string
	for _, o := range objs {
		out = append(out, "K:"+o.Key)
	}
	for _, p := range cps {
		out = append(out, "P:"+p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][2:] < out[j][2:] })
	return out
}
