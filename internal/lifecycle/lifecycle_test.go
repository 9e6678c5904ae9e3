package lifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func doc(rules ...string) []byte {
	return []byte(`<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + strings.Join(rules, "") + `</LifecycleConfiguration>`)
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("x", 256)
	cases := []struct {
		name, code string
		body       []byte
	}{
		{"not xml", "MalformedXML", []byte("<Lifecycle")},
		{"no rules", "MalformedXML", doc()},
		{"bad status", "MalformedXML", doc(`<Rule><Status>On</Status><Filter/><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"no filter", "MalformedXML", doc(`<Rule><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"filter and prefix", "MalformedXML", doc(`<Rule><Status>Enabled</Status><Prefix>a</Prefix><Filter/><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"zero days", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Expiration><Days>0</Days></Expiration></Rule>`)},
		{"negative days", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Expiration><Days>-3</Days></Expiration></Rule>`)},
		{"days and date", "MalformedXML", doc(`<Rule><Status>Enabled</Status><Filter/><Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>`)},
		{"date not midnight", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration></Rule>`)},
		{"date garbage", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Expiration><Date>tomorrow</Date></Expiration></Rule>`)},
		{"id too long", "InvalidArgument", doc(`<Rule><ID>` + long + `</ID><Status>Enabled</Status><Filter/><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"duplicate id", "InvalidArgument", doc(
			`<Rule><ID>r</ID><Status>Enabled</Status><Filter/><Expiration><Days>1</Days></Expiration></Rule>`,
			`<Rule><ID>r</ID><Status>Enabled</Status><Filter/><Expiration><Days>2</Days></Expiration></Rule>`)},
		{"no action", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/></Rule>`)},
		{"and beside a predicate", "MalformedXML", doc(`<Rule><Status>Enabled</Status><Filter><Prefix>a</Prefix><And><Prefix>b</Prefix><ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"empty and", "MalformedXML", doc(`<Rule><Status>Enabled</Status><Filter><And></And></Filter><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"duplicate tags without and", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></Filter><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"and duplicate tags", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter><And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></And></Filter><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"size bounds inverted", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter><Expiration><Days>1</Days></Expiration></Rule>`)},
		{"noncurrent zero", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration></Rule>`)},
		{"newer noncurrent too many", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`)},
		{"abort zero", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`)},
		{"abort with tags", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`)},
		{"marker with tags", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`)},
		{"transition to standard", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Transition><Days>1</Days><StorageClass>STANDARD</StorageClass></Transition></Rule>`)},
		{"transition without class", "MalformedXML", doc(`<Rule><Status>Enabled</Status><Filter/><Transition><Days>1</Days></Transition></Rule>`)},
		{"transition days and date", "MalformedXML", doc(`<Rule><Status>Enabled</Status><Filter/><Transition><Days>1</Days><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>`)},
		{"transition negative days", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Transition><Days>-1</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>`)},
		{"transition same class twice", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition><Transition><Days>2</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>`)},
		{"transition mixed days and date", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition><Transition><Date>2030-01-01T00:00:00Z</Date><StorageClass>COLD</StorageClass></Transition></Rule>`)},
		{"noncurrent transition without days", "InvalidArgument", doc(`<Rule><Status>Enabled</Status><Filter/><NoncurrentVersionTransition><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition></Rule>`)},
		{"trailing garbage", "MalformedXML", append(doc(`<Rule><Status>Enabled</Status><Filter/><Expiration><Days>1</Days></Expiration></Rule>`), "<x/>"...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.body)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %v, want *Error %s", err, c.code)
			}
			if e.Code != c.code {
				t.Fatalf("code %s (%s), want %s", e.Code, e.Message, c.code)
			}
		})
	}
}

func TestParseValidRoundTrip(t *testing.T) {
	body := doc(
		`<Rule><ID>logs</ID><Status>Enabled</Status><Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>30</Days></Expiration></Rule>`,
		`<Rule><ID>old</ID><Status>Disabled</Status><Prefix>tmp/</Prefix><Expiration><Date>2030-01-01T00:00:00.000Z</Date></Expiration></Rule>`,
		`<Rule><ID>nc</ID><Status>Enabled</Status><Filter><And><Prefix>a/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></And></Filter><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`,
		`<Rule><ID>mp</ID><Status>Enabled</Status><Filter><Prefix>up/</Prefix></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`,
	)
	c, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Parse(out)
	if err != nil {
		t.Fatalf("re-parse of %s: %v", out, err)
	}
	if len(c2.Rules) != 4 || c2.Rules[2].Filter.And.Tags[0].Key != "k" || *c2.Rules[1].Expiration.Date != "2030-01-01T00:00:00.000Z" {
		t.Fatalf("round trip lost data: %s", out)
	}
}

func TestTransitions(t *testing.T) {
	c, err := Parse(doc(
		`<Rule><ID>tier</ID><Status>Enabled</Status><Filter><Prefix>a/</Prefix></Filter>`+
			`<Transition><Days>1</Days><StorageClass>STANDARD_IA</StorageClass></Transition>`+
			`<Transition><Days>3</Days><StorageClass>GLACIER</StorageClass></Transition>`+
			`<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition></Rule>`,
		`<Rule><ID>exp</ID><Status>Enabled</Status><Filter><Prefix>a/x</Prefix></Filter><Expiration><Days>2</Days></Expiration></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.StorageClasses(); len(got) != 2 || got[0] != "STANDARD_IA" || got[1] != "GLACIER" {
		t.Fatalf("StorageClasses = %v", got)
	}
	day := time.Hour
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(days float64) time.Time { return t0.Add(time.Duration(days * float64(day))) }
	cur := func(key, class string) Version {
		return Version{Key: key, ModTime: t0, IsLatest: true, StorageClass: class}
	}
	cases := []struct {
		name   string
		v      Version
		now    time.Time
		action Action
		class  string
	}{
		{"not yet", cur("a/1", ""), at(0.5), None, ""},
		{"first step", cur("a/1", ""), at(1), TransitionCurrent, "STANDARD_IA"},
		{"already there", cur("a/1", "STANDARD_IA"), at(2), None, ""},
		{"last step wins", cur("a/1", ""), at(3), TransitionCurrent, "GLACIER"},
		{"from the first step", cur("a/1", "STANDARD_IA"), at(4), TransitionCurrent, "GLACIER"},
		{"never back up", cur("a/1", "GLACIER"), at(2), None, ""},
		{"other prefix", cur("b/1", ""), at(9), None, ""},
		{"expiry wins", cur("a/x", ""), at(3), ExpireCurrent, ""},
		{"noncurrent due", Version{Key: "a/1", ModTime: t0, NoncurrentSince: at(1), NewerNoncurrent: 1}, at(2), TransitionNoncurrent, "GLACIER"},
		{"noncurrent kept newer", Version{Key: "a/1", ModTime: t0, NoncurrentSince: at(1), NewerNoncurrent: 0}, at(2), None, ""},
		{"noncurrent not yet", Version{Key: "a/1", ModTime: t0, NoncurrentSince: at(1.5), NewerNoncurrent: 1}, at(2), None, ""},
		{"delete marker", Version{Key: "a/1", ModTime: t0, IsLatest: true, DeleteMarker: true}, at(9), None, ""},
	}
	for _, tc := range cases {
		d := c.Evaluate(tc.v, tc.now, day)
		if d.Action != tc.action || d.StorageClass != tc.class {
			t.Errorf("%s: %+v, want %v %q", tc.name, d, tc.action, tc.class)
		}
	}
	if got := TransitionCurrent.EventNames(); len(got) != 2 || got[0] != "ObjectLifecycle:Transition:Current" || got[1] != "LifecycleTransition" {
		t.Errorf("current transition events %v", got)
	}
	if got := TransitionNoncurrent.EventNames(); len(got) != 1 || got[0] != "ObjectLifecycle:Transition:NonCurrent" {
		t.Errorf("noncurrent transition events %v", got)
	}
	// Round trip keeps the transitions.
	out, _ := c.Marshal()
	if !strings.Contains(string(out), "<Transition><Days>3</Days><StorageClass>GLACIER</StorageClass></Transition>") {
		t.Errorf("marshalled %s", out)
	}
}

func TestDueRoundsToMidnight(t *testing.T) {
	from := time.Date(2026, 3, 1, 15, 4, 0, 0, time.UTC)
	if got, want := Due(from, 1, Day), time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("Due = %v, want %v", got, want)
	}
	midnight := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if got, want := Due(midnight, 1, Day), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("Due at midnight = %v, want %v", got, want)
	}
	if got, want := Due(from, 3, time.Second), from.Add(3*time.Second); !got.Equal(want) {
		t.Fatalf("debug Due = %v, want %v", got, want)
	}
}

func TestEvaluate(t *testing.T) {
	c, err := Parse(doc(
		`<Rule><ID>cur</ID><Status>Enabled</Status><Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>2</Days></Expiration></Rule>`,
		`<Rule><ID>nc</ID><Status>Enabled</Status><Filter><Prefix>logs/</Prefix></Filter><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`,
		`<Rule><ID>dm</ID><Status>Enabled</Status><Filter><Prefix>dm/</Prefix></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`,
		`<Rule><ID>tagged</ID><Status>Enabled</Status><Filter><And><Prefix>t/</Prefix><Tag><Key>class</Key><Value>tmp</Value></Tag><ObjectSizeLessThan>100</ObjectSizeLessThan></And></Filter><Expiration><Days>1</Days></Expiration></Rule>`,
		`<Rule><ID>off</ID><Status>Disabled</Status><Filter><Prefix>off/</Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>`,
	))
	if err != nil {
		t.Fatal(err)
	}
	day := time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cases := []struct {
		name string
		v    Version
		now  time.Time
		want Decision
	}{
		{"current not yet due", Version{Key: "logs/a", ModTime: t0, IsLatest: true}, at(1), Decision{}},
		{"current due", Version{Key: "logs/a", ModTime: t0, IsLatest: true}, at(2), Decision{Action: ExpireCurrent, RuleID: "cur"}},
		{"other prefix", Version{Key: "data/a", ModTime: t0, IsLatest: true}, at(9), Decision{}},
		{"disabled rule", Version{Key: "off/a", ModTime: t0, IsLatest: true}, at(9), Decision{}},
		{"noncurrent due", Version{Key: "logs/a", ModTime: t0, NoncurrentSince: at(1), NewerNoncurrent: 2}, at(2), Decision{Action: ExpireNoncurrent, RuleID: "nc"}},
		{"noncurrent kept by newer count", Version{Key: "logs/a", ModTime: t0, NoncurrentSince: at(1), NewerNoncurrent: 1}, at(9), Decision{}},
		{"noncurrent not yet", Version{Key: "logs/a", ModTime: t0, NoncurrentSince: at(5), NewerNoncurrent: 4}, at(5), Decision{}},
		{"expired marker", Version{Key: "dm/a", ModTime: t0, IsLatest: true, DeleteMarker: true, OnlyVersion: true}, at(0), Decision{Action: RemoveDeleteMarker, RuleID: "dm"}},
		{"marker with older versions stays", Version{Key: "dm/a", ModTime: t0, IsLatest: true, DeleteMarker: true}, at(9), Decision{}},
		{"days rule removes expired marker", Version{Key: "logs/m", ModTime: t0, IsLatest: true, DeleteMarker: true, OnlyVersion: true}, at(2), Decision{Action: RemoveDeleteMarker, RuleID: "cur"}},
		{"tagged match", Version{Key: "t/a", Size: 10, ModTime: t0, IsLatest: true, Tags: map[string]string{"class": "tmp"}}, at(1), Decision{Action: ExpireCurrent, RuleID: "tagged"}},
		{"tag mismatch", Version{Key: "t/a", Size: 10, ModTime: t0, IsLatest: true, Tags: map[string]string{"class": "keep"}}, at(9), Decision{}},
		{"too big for size filter", Version{Key: "t/a", Size: 100, ModTime: t0, IsLatest: true, Tags: map[string]string{"class": "tmp"}}, at(9), Decision{}},
	}
	for _, c2 := range cases {
		t.Run(c2.name, func(t *testing.T) {
			if got := c.Evaluate(c2.v, c2.now, day); got != c2.want {
				t.Fatalf("Evaluate = %+v, want %+v", got, c2.want)
			}
		})
	}
}

func TestDateExpiration(t *testing.T) {
	c, err := Parse(doc(`<Rule><ID>d</ID><Status>Enabled</Status><Filter/><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	v := Version{Key: "k", ModTime: time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC), IsLatest: true}
	if d := c.Evaluate(v, time.Date(2029, 12, 31, 23, 59, 59, 0, time.UTC), Day); d.Action != None {
		t.Fatalf("expired before the date: %+v", d)
	}
	if d := c.Evaluate(v, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Day); d.Action != ExpireCurrent {
		t.Fatalf("not expired on the date: %+v", d)
	}
}

func TestAbortUploadAndPrefixes(t *testing.T) {
	c, err := Parse(doc(
		`<Rule><ID>mp</ID><Status>Enabled</Status><Filter><Prefix>up/</Prefix></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`,
		`<Rule><ID>x</ID><Status>Enabled</Status><Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if id, ok := c.AbortUpload("up/big", t0, t0.Add(time.Second), time.Second); !ok || id != "mp" {
		t.Fatalf("AbortUpload = %q %v", id, ok)
	}
	if _, ok := c.AbortUpload("other/big", t0, t0.Add(time.Hour), time.Second); ok {
		t.Fatal("aborted an upload outside the prefix")
	}
	if got := c.Prefixes(); len(got) != 2 || got[0] != "up/" || got[1] != "logs/" {
		t.Fatalf("Prefixes = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(doc(`<Rule><ID>a</ID><Status>Enabled</Status><Filter><Prefix>p</Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>`))
	f.Add(doc(`<Rule><Status>Enabled</Status><Filter><And><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeLessThan>3</ObjectSizeLessThan></And></Filter><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := Parse(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("error without an S3 code: %v", err)
			}
			return
		}
		// A valid document survives its own round trip and evaluation.
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("re-parse of accepted document failed: %v\n%s", err, out)
		}
		c.Evaluate(Version{Key: "k", IsLatest: true}, time.Now(), Day)
	})
}

// RGW's Filter forms: predicates side by side are their conjunction,
// stored and returned as And; And with one predicate is taken.
func TestFilterWithoutAnd(t *testing.T) {
	c, err := Parse(doc(
		`<Rule><ID>pt</ID><Status>Enabled</Status><Filter><Prefix>a/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><Days>1</Days></Expiration></Rule>`,
		`<Rule><ID>tt</ID><Status>Enabled</Status><Filter><Tag><Key>x</Key><Value>1</Value></Tag><Tag><Key>y</Key><Value>2</Value></Tag></Filter><Expiration><Days>1</Days></Expiration></Rule>`,
		`<Rule><ID>one</ID><Status>Enabled</Status><Filter><And><Prefix>b/</Prefix></And></Filter><Expiration><Days>1</Days></Expiration></Rule>`,
		`<Rule><ID>sz</ID><Status>Enabled</Status><Filter><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>20</ObjectSizeLessThan></Filter><Expiration><Days>1</Days></Expiration></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<Filter><And><Prefix>a/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter>`,
		`<Filter><And><Tag><Key>x</Key><Value>1</Value></Tag><Tag><Key>y</Key><Value>2</Value></Tag></And></Filter>`,
		`<Filter><And><Prefix>b/</Prefix></And></Filter>`,
		`<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>20</ObjectSizeLessThan></And></Filter>`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stored document lacks %s:\n%s", want, out)
		}
	}
	now := time.Date(2030, 1, 10, 0, 0, 0, 0, time.UTC)
	old := now.Add(-10 * Day)
	for _, tc := range []struct {
		v    Version
		rule string
	}{
		{Version{Key: "a/1", Size: 1, ModTime: old, IsLatest: true, Tags: map[string]string{"k": "v"}}, "pt"},
		{Version{Key: "a/1", Size: 1, ModTime: old, IsLatest: true}, ""},
		{Version{Key: "z", Size: 1, ModTime: old, IsLatest: true, Tags: map[string]string{"x": "1", "y": "2"}}, "tt"},
		{Version{Key: "z", Size: 1, ModTime: old, IsLatest: true, Tags: map[string]string{"x": "1"}}, ""},
		{Version{Key: "b/1", Size: 1, ModTime: old, IsLatest: true}, "one"},
		{Version{Key: "q", Size: 15, ModTime: old, IsLatest: true}, "sz"},
		{Version{Key: "q", Size: 25, ModTime: old, IsLatest: true}, ""},
	} {
		if got := c.Evaluate(tc.v, now, Day); got.RuleID != tc.rule {
			t.Errorf("%+v: rule %q, want %q", tc.v, got.RuleID, tc.rule)
		}
	}
}
