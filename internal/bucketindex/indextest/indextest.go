// Package indextest is the cairn_index class suite for versions: the same
// transcript and model tests run on every backend (the embedded store in
// internal/bucketindex, RADOS in internal/objstore/radosstore), since the
// class is Go code that runs on both.
package indextest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Opener returns an IOContext of a fresh pool on a store whose registry
// has bucketindex.Register applied.
type Opener func(t *testing.T) objstore.IOContext

type suite struct {
	open Opener
	seq  int
}

func (s *suite) newIndex(t *testing.T, shards int) bucketindex.Index {
	t.Helper()
	s.seq++
	ix := bucketindex.Index{IO: s.open(t), BucketID: fmt.Sprintf("b%d", s.seq), Layout: bucketindex.Layout{Gen: 0, NumShards: shards}}
	if err := ix.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}

func entry(key string, size int64, tag string) bucketindex.Entry {
	return bucketindex.Entry{Key: key, Size: size, ETag: "e-" + tag, Tag: tag,
		Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: tag, Size: size, StripeSize: 4 << 20}}}}
}

// Run runs every test of the suite.
func Run(t *testing.T, open Opener) {
	s := &suite{open: open}
	t.Run("VersionTranscript", s.versionTranscript)
	t.Run("VersionConditions", s.versionConditions)
	t.Run("ListNeverShowsVersions", s.listNeverShowsVersions)
	t.Run("VersionsModelAndReshard", s.versionsModelAndReshard)
}

// describe renders a version listing as "key:id[*][dm]" words (* = latest),
// with ids shortened to the tag that wrote them, so transcripts read well.
func describe(vs []bucketindex.ListedVersion) string {
	var w []string
	for _, v := range vs {
		s := v.Key + ":" + v.Tag
		if v.VersionID == bucketindex.NullVersion {
			s += "(null)"
		}
		if v.Marker {
			s += "[dm]"
		}
		if v.IsLatest {
			s += "*"
		}
		w = append(w, s)
	}
	return strings.Join(w, " ")
}

func listAll(t *testing.T, ix bucketindex.Index) string {
	t.Helper()
	vs, more, err := ix.ListVersions(context.Background(), bucketindex.VersionMark{}, "", 1000)
	if err != nil || more {
		t.Fatalf("list versions: %v more=%v", err, more)
	}
	return describe(vs)
}

func current(t *testing.T, ix bucketindex.Index) string {
	t.Helper()
	es, _, err := ix.List(context.Background(), "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var w []string
	for _, e := range es {
		// A listing carries no tag (ListingProjection): the entry does.
		full, err := ix.Get(context.Background(), e.Key)
		if err != nil {
			t.Fatalf("get listed %q: %v", e.Key, err)
		}
		w = append(w, e.Key+":"+full.Tag)
	}
	return strings.Join(w, " ")
}

func (s *suite) versionTranscript(t *testing.T) {
	ctx := context.Background()
	ix := s.newIndex(t, 3)
	step := func(what string, gotList, wantList, gotCur, wantCur string) {
		t.Helper()
		if gotList != wantList || gotCur != wantCur {
			t.Fatalf("%s:\n versions %q\n want     %q\n current  %q\n want     %q", what, gotList, wantList, gotCur, wantCur)
		}
	}
	link := func(mode string, e bucketindex.Entry) bucketindex.VersionResult {
		t.Helper()
		r, err := ix.LinkVersion(ctx, mode, e, bucketindex.VersionCond{})
		if err != nil {
			t.Fatalf("link %s %s: %v", mode, e.Tag, err)
		}
		return r
	}
	// Unversioned: a legacy entry, the null version.
	link(bucketindex.ModeUnversioned, entry("a", 10, "t1"))
	link(bucketindex.ModeUnversioned, entry("b", 5, "t2"))
	step("unversioned", listAll(t, ix), "a:t1(null)* b:t2(null)*", current(t, ix), "a:t1 b:t2")

	// Enabled: the legacy entry becomes the null version record.
	r := link(bucketindex.ModeEnabled, entry("a", 20, "t3"))
	if r.Entry.Seq != 2 || r.Entry.VersionID != bucketindex.VersionID(2, "t3") {
		t.Fatalf("second version: %+v", r.Entry)
	}
	v3 := r.Entry.VersionID
	step("enabled put", listAll(t, ix), "a:t3* a:t1(null) b:t2(null)*", current(t, ix), "a:t3 b:t2")

	// A retry with the same tag changes nothing.
	if r2 := link(bucketindex.ModeEnabled, entry("a", 20, "t3")); !r2.Retry || r2.Entry.VersionID != v3 {
		t.Fatalf("retry: %+v", r2)
	}
	// A delete marker hides the key from the plain listing.
	m := entry("a", 0, "t4")
	m.Marker = true
	rm := link(bucketindex.ModeEnabled, m)
	if !rm.MarkerCurrent || rm.Current != nil {
		t.Fatalf("marker result %+v", rm)
	}
	step("marker", listAll(t, ix), "a:t4[dm]* a:t3 a:t1(null) b:t2(null)*", current(t, ix), "b:t2")
	st, _ := ix.Stats(ctx)
	if st.NumObjects != 1 || st.Size != 5 || st.NumVersions != 4 || st.VersionSize != 35 {
		t.Fatalf("stats after marker %+v", st)
	}
	// Removing the marker promotes t3.
	if _, err := ix.UnlinkVersion(ctx, "a", rm.Entry.VersionID, ""); err != nil {
		t.Fatal(err)
	}
	step("marker removed", listAll(t, ix), "a:t3* a:t1(null) b:t2(null)*", current(t, ix), "a:t3 b:t2")
	// Removing a non-current version leaves the current one.
	if _, err := ix.UnlinkVersion(ctx, "a", "null", ""); err != nil {
		t.Fatal(err)
	}
	step("null removed", listAll(t, ix), "a:t3* b:t2(null)*", current(t, ix), "a:t3 b:t2")
	// Suspended: writes replace the null version (none yet, then t5).
	link(bucketindex.ModeSuspended, entry("a", 1, "t5"))
	link(bucketindex.ModeSuspended, entry("a", 2, "t6"))
	step("suspended", listAll(t, ix), "a:t6(null)* a:t3 b:t2(null)*", current(t, ix), "a:t6 b:t2")
	// A suspended delete is a null marker replacing the null version.
	m2 := entry("a", 0, "t7")
	m2.Marker = true
	rm2 := link(bucketindex.ModeSuspended, m2)
	if rm2.Entry.VersionID != "null" || len(rm2.Freed) != 1 || rm2.Freed[0].Tag != "t6" {
		t.Fatalf("suspended marker %+v", rm2)
	}
	step("suspended delete", listAll(t, ix), "a:t7(null)[dm]* a:t3 b:t2(null)*", current(t, ix), "b:t2")
	// Unknown versions are ErrNotFound; malformed ids too.
	for _, id := range []string{bucketindex.VersionID(99, "x"), "nope", v3 + "0"} {
		if _, err := ix.UnlinkVersion(ctx, "a", id, ""); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("unlink %q: %v", id, err)
		}
		if _, err := ix.GetVersion(ctx, "a", id); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("get %q: %v", id, err)
		}
	}
	if e, err := ix.GetVersion(ctx, "a", v3); err != nil || e.Tag != "t3" {
		t.Fatalf("get v3: %+v %v", e, err)
	}
	if e, err := ix.GetVersion(ctx, "b", "null"); err != nil || e.Tag != "t2" {
		t.Fatalf("get legacy null: %+v %v", e, err)
	}
	if e, err := ix.Newest(ctx, "a"); err != nil || !e.Marker {
		t.Fatalf("newest of a: %+v %v", e, err)
	}
	// Delete everything: no record, pointer or entry is left, stats are 0.
	for _, id := range []string{"null", v3} {
		if _, err := ix.UnlinkVersion(ctx, "a", id, ""); err != nil {
			t.Fatal(id, err)
		}
	}
	if _, err := ix.UnlinkVersion(ctx, "b", "null", ""); err != nil {
		t.Fatal(err)
	}
	step("empty", listAll(t, ix), "", current(t, ix), "")
	st, _ = ix.Stats(ctx)
	if st != (bucketindex.Stats{}) {
		t.Fatalf("stats of an empty index %+v", st)
	}
	for i := 0; i < 3; i++ {
		kvs, _, err := ix.RawEntries(ctx, i, "", 100)
		if err != nil || len(kvs) != 0 {
			t.Fatalf("shard %d keeps %q %v", i, kvs, err)
		}
	}
}

func (s *suite) versionConditions(t *testing.T) {
	ctx := context.Background()
	ix := s.newIndex(t, 1)
	c := func(mode string, e bucketindex.Entry, vc bucketindex.VersionCond) error {
		_, err := ix.LinkVersion(ctx, mode, e, vc)
		return err
	}
	for _, mode := range []string{bucketindex.ModeUnversioned, bucketindex.ModeEnabled} {
		k := "k" + mode
		if err := c(mode, entry(k, 1, mode+"1"), bucketindex.VersionCond{IfExists: true}); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("%s if-exists on absent: %v", mode, err)
		}
		if err := c(mode, entry(k, 1, mode+"1"), bucketindex.VersionCond{IfETag: "x"}); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("%s if-etag on absent: %v", mode, err)
		}
		if err := c(mode, entry(k, 1, mode+"1"), bucketindex.VersionCond{IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
		// A retry of the same write passes its own condition.
		if err := c(mode, entry(k, 1, mode+"1"), bucketindex.VersionCond{IfAbsent: true}); err != nil {
			t.Fatalf("%s retry: %v", mode, err)
		}
		if err := c(mode, entry(k, 1, mode+"2"), bucketindex.VersionCond{IfAbsent: true}); !errors.Is(err, objstore.ErrCanceled) {
			t.Fatalf("%s if-absent on present: %v", mode, err)
		}
		if err := c(mode, entry(k, 1, mode+"2"), bucketindex.VersionCond{IfETag: "e-nope"}); !errors.Is(err, objstore.ErrCanceled) {
			t.Fatalf("%s if-etag mismatch: %v", mode, err)
		}
		if err := c(mode, entry(k, 1, mode+"2"), bucketindex.VersionCond{IfETag: "e-" + mode + "1", IfExists: true}); err != nil {
			t.Fatal(err)
		}
		// If-None-Match: <etag> refuses only the current ETag; IfTag
		// only the current write.
		if err := c(mode, entry(k, 1, mode+"3"), bucketindex.VersionCond{IfNoneETag: "e-" + mode + "2"}); !errors.Is(err, objstore.ErrCanceled) {
			t.Fatalf("%s if-none-etag on the current etag: %v", mode, err)
		}
		if err := c(mode, entry(k, 1, mode+"3"), bucketindex.VersionCond{IfTag: mode + "1"}); !errors.Is(err, objstore.ErrCanceled) {
			t.Fatalf("%s if-tag of a replaced write: %v", mode, err)
		}
		if err := c(mode, entry(k, 1, mode+"3"), bucketindex.VersionCond{IfNoneETag: "e-" + mode + "1", IfTag: mode + "2"}); err != nil {
			t.Fatal(err)
		}
		if err := c(mode, entry(k+"-absent", 1, mode+"1"), bucketindex.VersionCond{IfTag: mode + "1"}); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("%s if-tag on absent: %v", mode, err)
		}
		if err := c(mode, entry(k+"-absent", 1, mode+"1"), bucketindex.VersionCond{IfNoneETag: "e-x"}); err != nil {
			t.Fatalf("%s if-none-etag on absent: %v", mode, err)
		}
		// UnlinkVersionIf with IfTag: only the write checked goes.
		vid := bucketindex.NullVersion
		if mode == bucketindex.ModeEnabled {
			vr, err := ix.LinkVersion(ctx, mode, entry(k, 1, mode+"4"), bucketindex.VersionCond{})
			if err != nil {
				t.Fatal(err)
			}
			vid = vr.Entry.VersionID
		}
		if _, err := ix.UnlinkVersionIf(ctx, k, vid, bucketindex.UnlinkCond{IfTag: mode + "1"}); !errors.Is(err, objstore.ErrCanceled) {
			t.Fatalf("%s unlink if-tag of another write: %v", mode, err)
		}
	}
	// Behind a delete marker the key is absent for the conditions.
	m := entry("kenabled", 0, "m")
	m.Marker = true
	if err := c(bucketindex.ModeEnabled, m, bucketindex.VersionCond{}); err != nil {
		t.Fatal(err)
	}
	if err := c(bucketindex.ModeEnabled, entry("kenabled", 1, "n"), bucketindex.VersionCond{IfExists: true}); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("if-exists behind a marker: %v", err)
	}
	if err := c(bucketindex.ModeEnabled, entry("kenabled", 1, "n"), bucketindex.VersionCond{IfAbsent: true}); err != nil {
		t.Fatalf("if-absent behind a marker: %v", err)
	}
}

// The private namespace never appears in a plain listing, whatever the
// prefix or start position (cf. RGW's index_list test).
func (s *suite) listNeverShowsVersions(t *testing.T) {
	ctx := context.Background()
	ix := s.newIndex(t, 2)
	for i := 0; i < 20; i++ {
		e := entry(fmt.Sprintf("k%02d", i%5), 1, fmt.Sprintf("t%d", i))
		e.Marker = i >= 15 && i%2 == 0
		if _, err := ix.LinkVersion(ctx, bucketindex.ModeEnabled, e, bucketindex.VersionCond{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, start := range []string{"", "k02", "\xfe"} {
		for _, p := range []string{"", "k", "\xff", "\xffv"} {
			es, _, err := ix.List(ctx, start, p, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if strings.HasPrefix(e.Key, "\xff") || e.Marker {
					t.Fatalf("listing after %q prefix %q shows %q", start, p, e.Key)
				}
			}
		}
	}
	if got := current(t, ix); got != "k00:t15 k02:t17 k04:t19" {
		t.Fatalf("current %q", got)
	}
}

// model is the versions of each key, newest first.
type model map[string][]bucketindex.Entry

func (m model) describe(prefix string) string {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, prefix) && len(m[k]) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var vs []bucketindex.ListedVersion
	for _, k := range keys {
		for i, e := range m[k] {
			vs = append(vs, bucketindex.ListedVersion{Entry: e, IsLatest: i == 0})
		}
	}
	return describe(vs)
}

// Random versioned operations against a model, with paged listings and a
// reshard (copy, then logged changes replayed) into another layout.
func (s *suite) versionsModelAndReshard(t *testing.T) {
	ctx := context.Background()
	src := s.newIndex(t, 3)
	rng := rand.New(rand.NewSource(7))
	m := model{}
	keys := []string{"a", "a/b", "a\x01", "a\x01b", "b", "ba", "c/d/e", "é"}
	tag := 0
	// Legacy entries first (a never-versioned bucket), then versioning.
	legacy := true
	convert := func(k string) { // the first versioned write turns a legacy entry into the null record
		if len(m[k]) == 1 && m[k][0].Seq == 0 {
			m[k][0].Seq = 1
		}
	}
	// Storage classes ("" = STANDARD): links pick one, transitions
	// (set_version_data) move a version to another.
	classes := []string{"", "", "COLD", "GLACIER"}
	classed := func(e bucketindex.Entry) bucketindex.Entry {
		e.Class = classes[rng.Intn(len(classes))]
		return e
	}
	transition := func(ix bucketindex.Index, k string) {
		i := rng.Intn(len(m[k]))
		v := m[k][i]
		if v.Marker {
			return
		}
		class := classes[rng.Intn(len(classes))]
		moved := bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: fmt.Sprintf("m%d", tag), Size: v.Size, StripeSize: 4 << 20, Pool: strings.ToLower(class)}}}
		if err := ix.SetVersionData(ctx, k, v.VersionID, v.Tag, v.Manifest, moved, class, fmt.Sprintf("g%d", tag)); err != nil {
			t.Fatalf("transition %s %s: %v", k, v.VersionID, err)
		}
		m[k][i].Manifest, m[k][i].Class = moved, class
	}
	apply := func(ix bucketindex.Index) {
		k := keys[rng.Intn(len(keys))]
		tag++
		if legacy && len(m[k]) > 0 && rng.Intn(4) == 0 {
			transition(ix, k)
			return
		}
		if legacy {
			res, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, classed(entry(k, int64(rng.Intn(100)), fmt.Sprintf("t%d", tag))), bucketindex.VersionCond{})
			if err != nil {
				t.Fatal(err)
			}
			res.Entry.VersionID = bucketindex.NullVersion // as listed
			m[k] = []bucketindex.Entry{res.Entry}
			// "z/"+k is never written again: it stays a legacy entry
			// through the reshard below.
			res, err = ix.LinkVersion(ctx, bucketindex.ModeUnversioned, classed(entry("z/"+k, 5, fmt.Sprintf("z%d", tag))), bucketindex.VersionCond{})
			if err != nil {
				t.Fatal(err)
			}
			res.Entry.VersionID = bucketindex.NullVersion
			m["z/"+k] = []bucketindex.Entry{res.Entry}
			return
		}
		switch r := rng.Intn(12); {
		case r < 5:
			convert(k)
			e := entry(k, int64(rng.Intn(100)), fmt.Sprintf("t%d", tag))
			e.Marker = r == 4
			if !e.Marker {
				e = classed(e)
			}
			res, err := ix.LinkVersion(ctx, bucketindex.ModeEnabled, e, bucketindex.VersionCond{})
			if err != nil {
				t.Fatal(err)
			}
			m[k] = append([]bucketindex.Entry{res.Entry}, m[k]...)
		case r < 8 && len(m[k]) > 0:
			i := rng.Intn(len(m[k]))
			if _, err := ix.UnlinkVersion(ctx, k, m[k][i].VersionID, ""); err != nil {
				t.Fatal(err)
			}
			m[k] = append(m[k][:i], m[k][i+1:]...)
		case r >= 10 && len(m[k]) > 0:
			transition(ix, k)
		default:
			convert(k)
			e := classed(entry(k, 3, fmt.Sprintf("t%d", tag)))
			res, err := ix.LinkVersion(ctx, bucketindex.ModeSuspended, e, bucketindex.VersionCond{})
			if err != nil {
				t.Fatal(err)
			}
			vs := m[k][:0:0]
			for _, v := range m[k] {
				if v.VersionID != "null" {
					vs = append(vs, v)
				}
			}
			m[k] = append([]bucketindex.Entry{res.Entry}, vs...)
		}
	}
	check := func(ix bucketindex.Index, what string) {
		t.Helper()
		if got, want := listAll(t, ix), m.describe(""); got != want {
			t.Fatalf("%s: versions\n got  %q\n want %q", what, got, want)
		}
		// Paged, with markers inside keys, and with a prefix.
		for _, page := range []int{1, 2, 3} {
			var all []bucketindex.ListedVersion
			mark := bucketindex.VersionMark{}
			for {
				vs, more, err := ix.ListVersions(ctx, mark, "a", page)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, vs...)
				if !more {
					break
				}
				last := vs[len(vs)-1]
				mark = bucketindex.VersionMark{Key: last.Key, Seq: last.Seq}
			}
			// IsLatest of a page's first item is only known when the page
			// starts a key: compare it from the model.
			for i := range all {
				all[i].IsLatest = m[all[i].Key][0].Seq == all[i].Seq
			}
			if got, want := describe(all), m.describe("a"); got != want {
				t.Fatalf("%s: paged by %d\n got  %q\n want %q", what, page, got, want)
			}
		}
		var cur []string
		var st bucketindex.Stats
		var sorted []string
		for k := range m {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			for _, v := range m[k] {
				st.NumVersions++
				st.VersionSize += uint64(v.Size)
				if v.Seq == 0 {
					st.Legacy++
				}
			}
			if len(m[k]) > 0 && !m[k][0].Marker {
				cur = append(cur, k+":"+m[k][0].Tag)
				st.NumObjects++
				st.Size += uint64(m[k][0].Size)
			}
		}
		if got := current(t, ix); got != strings.Join(cur, " ") {
			t.Fatalf("%s: current %q want %q", what, got, strings.Join(cur, " "))
		}
		got, _ := ix.Stats(ctx)
		if got != st {
			t.Fatalf("%s: stats %+v want %+v", what, got, st)
		}
		// Per storage class: every version in its class, the current
		// object too.
		byClass := map[string]bucketindex.Stats{}
		for _, vs := range m {
			for i, v := range vs {
				c := v.Class
				if c == "" {
					c = bucketindex.StandardClass
				}
				cs := byClass[c]
				cs.NumVersions++
				cs.VersionSize += uint64(v.Size)
				if i == 0 && !v.Marker {
					cs.NumObjects++
					cs.Size += uint64(v.Size)
				}
				byClass[c] = cs
			}
		}
		u, err := ix.Usage(ctx)
		if err != nil || u.Stats != st || !reflect.DeepEqual(u.Classes, byClass) {
			t.Fatalf("%s: usage %+v (%v) want classes %+v", what, u, err, byClass)
		}
	}
	for i := 0; i < 40; i++ {
		apply(src)
	}
	check(src, "legacy entries")
	legacy = false
	for i := 0; i < 300; i++ {
		apply(src)
	}
	check(src, "source")

	// Reshard 3 → 5: start logging, copy, change more, replay the log.
	dst := src
	dst.Layout = bucketindex.Layout{Gen: 1, NumShards: 5}
	if err := dst.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := src.SetState(ctx, bucketindex.StateLogging); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < src.Layout.NumShards; i++ {
		after := ""
		for {
			kvs, more, err := src.RawEntries(ctx, i, after, 7)
			if err != nil {
				t.Fatal(err)
			}
			split := map[int][]objstore.KV{}
			for _, kv := range kvs {
				s := bucketindex.PlaceOf(kv.Key, 5)
				split[s] = append(split[s], kv)
			}
			for s, part := range split {
				if err := dst.CopyIn(ctx, s, 0, part); err != nil {
					t.Fatal(err)
				}
			}
			if len(kvs) > 0 {
				after = kvs[len(kvs)-1].Key
			}
			if !more {
				break
			}
			// Changes while the copy runs land in the log.
			apply(src)
		}
	}
	for i := 0; i < 50; i++ {
		apply(src)
	}
	check(src, "source while logging")
	for i := 0; i < src.Layout.NumShards; i++ {
		recs, _, err := src.ReadLogRaw(ctx, i, 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		if recs, err = src.Resolve(ctx, i, recs); err != nil {
			t.Fatal(err)
		}
		groups := map[int][]bucketindex.RawLogRecord{}
		for _, r := range recs {
			s := bucketindex.PlaceOf(r.Key, 5)
			groups[s] = append(groups[s], r)
		}
		for s, g := range groups {
			// Twice: replay is idempotent.
			for n := 0; n < 2; n++ {
				if err := dst.Replay(ctx, s, 0, g); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check(dst, "target")
	for i := 0; i < 100; i++ {
		apply(dst)
	}
	check(dst, "target after more changes")
}
