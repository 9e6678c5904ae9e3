package tagging

import (
	"errors"
	"strings"
	"testing"
)

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return "untyped:" + err.Error()
	}
	return ""
}

func TestValidate(t *testing.T) {
	many := func(n int) Set {
		s := Set{}
		for i := 0; i < n; i++ {
			s = append(s, Tag{Key: "k" + strings.Repeat("x", i), Value: "v"})
		}
		return s
	}
	cases := []struct {
		name string
		s    Set
		kind Kind
		want string
	}{
		{"ok", Set{{"project", "blue"}, {"env", "a b+c-d=e.f_g:h/i@j"}}, Object, ""},
		{"unicode ok", Set{{"Ключ", "値"}}, Object, ""},
		{"empty value ok", Set{{"k", ""}}, Object, ""},
		{"ten ok", many(10), Object, ""},
		{"eleven", many(11), Object, "BadRequest"},
		{"fifty bucket ok", many(50), Bucket, ""},
		{"fifty-one bucket", many(51), Bucket, "InvalidTag"},
		{"duplicate", Set{{"a", "1"}, {"a", "2"}}, Object, "InvalidTag"},
		{"empty key", Set{{"", "1"}}, Object, "InvalidTag"},
		{"key 128", Set{{strings.Repeat("k", 128), "v"}}, Object, ""},
		{"key 129", Set{{strings.Repeat("k", 129), "v"}}, Object, "InvalidTag"},
		{"value 256", Set{{"k", strings.Repeat("v", 256)}}, Object, ""},
		{"value 257", Set{{"k", strings.Repeat("v", 257)}}, Object, "InvalidTag"},
		{"bad char", Set{{"k", "a<b"}}, Object, "InvalidTag"},
		{"aws prefix", Set{{"aws:x", "1"}}, Object, "InvalidTag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := code(c.s.Validate(c.kind)); got != c.want {
				t.Fatalf("Validate = %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseXMLAndHeader(t *testing.T) {
	s, err := ParseXML([]byte(`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b c</Key><Value>x/y</Value></Tag></TagSet></Tagging>`), Object)
	if err != nil || len(s) != 2 || s[1].Key != "b c" {
		t.Fatalf("ParseXML = %v, %v", s, err)
	}
	if _, err := ParseXML([]byte(`<Tagging><TagSet>`), Object); code(err) != "MalformedXML" {
		t.Fatalf("truncated XML: %v", err)
	}
	h, err := ParseHeader("a=1&b%20c=x%2Fy")
	if err != nil || len(h) != 2 || h[1].Key != "b c" || h[1].Value != "x/y" {
		t.Fatalf("ParseHeader = %v, %v", h, err)
	}
	if _, err := ParseHeader("a=1&a=2"); code(err) != "InvalidTag" {
		t.Fatalf("duplicate in header: %v", err)
	}
	if _, err := ParseHeader("a=%zz"); code(err) != "InvalidArgument" {
		t.Fatalf("bad escape: %v", err)
	}
	// Stored form is canonical and round-trips.
	enc := s.Encode()
	if enc != "a=1&b+c=x%2Fy" {
		t.Fatalf("Encode = %q", enc)
	}
	back, err := Decode(enc)
	if err != nil || len(back) != 2 || back.Map()["b c"] != "x/y" {
		t.Fatalf("Decode = %v, %v", back, err)
	}
	doc, err := s.MarshalDocument()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseXML(doc, Object)
	if err != nil || len(again) != 2 {
		t.Fatalf("document round trip: %v %v\n%s", again, err, doc)
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add("a=1&b=2")
	f.Add("k%20=v%2F")
	f.Fuzz(func(t *testing.T, h string) {
		s, err := ParseHeader(h)
		if err != nil {
			if code(err) == "" || strings.HasPrefix(code(err), "untyped") {
				t.Fatalf("error without an S3 code: %v", err)
			}
			return
		}
		back, err := Decode(s.Encode())
		if err != nil || len(back) != len(s) {
			t.Fatalf("stored form does not round-trip: %q -> %q (%v)", h, s.Encode(), err)
		}
	})
}
