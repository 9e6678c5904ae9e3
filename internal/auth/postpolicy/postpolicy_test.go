package postpolicy

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		ok   bool
		want int // conditions
	}{
		{`{"expiration":"2030-01-01T00:00:00.000Z","conditions":[{"bucket":"b"},["eq","$key","k"],["starts-with","$Content-Type","image/"],["content-length-range",1,"10"]]}`, true, 4},
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":[{"a":"1","b":"2"}]}`, true, 2},
		{`{"conditions":[]}`, false, 0},                                                     // no expiration
		{`{"expiration":"tomorrow","conditions":[]}`, false, 0},                             // bad date
		{`{"expiration":"2030-01-01T00:00:00Z"}`, false, 0},                                 // no conditions
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":[["eq","key","k"]]}`, false, 0}, // no $
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":[["in","$key","k"]]}`, false, 0},
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":[["content-length-range",10,1]]}`, false, 0},
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":[["content-length-range",-1,1]]}`, false, 0},
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":[{"key":5}]}`, false, 0},
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":["key"]}`, false, 0},
		{`not json`, false, 0},
		{`{"expiration":"2030-01-01T00:00:00Z","CONDITIONS":[]}`, false, 0}, // the document's keys keep their case
		{`{"EXPIRATION":"2030-01-01T00:00:00Z","conditions":[]}`, false, 0},
		{`{"expiration":"2030-01-01T00:00:00Z","conditions":[["StArTs-WiTh","$KeY","a"],{"bUcKeT":"b"}]}`, true, 2},
	} {
		p, err := Parse([]byte(tc.doc))
		if tc.ok != (err == nil) {
			t.Errorf("%s: err %v", tc.doc, err)
			continue
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v is not ErrMalformed", tc.doc, err)
		}
		if err == nil && len(p.Conditions) != tc.want {
			t.Errorf("%s: %d conditions", tc.doc, len(p.Conditions))
		}
	}
	if _, err := Decode("!!!"); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad base64: %v", err)
	}
}

func TestCheck(t *testing.T) {
	p, err := Decode(base64.StdEncoding.EncodeToString([]byte(`{"expiration":"2030-01-01T00:00:00Z","conditions":[
		{"bucket":"b"},["starts-with","$Key","user/"],["starts-with","$content-type","image/"],
		["eq","$X-Amz-Meta-Tag","a,b"],["content-length-range",1,100],["content-length-range",5,50],
		["starts-with","$success_action_redirect",""]]}`)))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, ok := p.LengthRange(); !ok || lo != 5 || hi != 50 {
		t.Fatalf("range %d %d %v", lo, hi, ok)
	}
	if p.Expired(time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)) || !p.Expired(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatal("expiry")
	}
	base := map[string]string{"bucket": "b", "key": "user/x", "content-type": "image/png", "x-amz-meta-tag": "a,b"}
	form := []string{"key", "content-type", "x-amz-meta-tag", "policy", "x-amz-signature", "x-ignore-me", "file"}
	if err := p.Check(base, form); err != nil {
		t.Fatalf("valid form: %v", err)
	}
	mod := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for name, tc := range map[string]struct {
		fields map[string]string
		form   []string
		msg    string
	}{
		"bucket":      {mod("bucket", "c"), form, `Policy Condition failed: {"bucket":"b"}`},
		"key prefix":  {mod("key", "other/x"), form, `Policy Condition failed: ["starts-with","$Key","user/"]`},
		"value case":  {mod("x-amz-meta-tag", "A,b"), form, "Policy Condition failed"},
		"ctype multi": {mod("content-type", "image/png, text/plain"), form, "Policy Condition failed"},
		"extra field": {base, append(form, "x-amz-meta-other"), "Extra input fields: x-amz-meta-other"},
	} {
		err := p.Check(tc.fields, tc.form)
		var ce *ConditionError
		if !errors.As(err, &ce) || !strings.Contains(ce.Msg, tc.msg) {
			t.Errorf("%s: %v, want %q", name, err, tc.msg)
		}
	}
	// Every value of a comma-separated Content-Type must match starts-with.
	if err := p.Check(mod("content-type", "image/png, image/jpeg"), form); err != nil {
		t.Errorf("multi content-type: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"expiration":"2030-01-01T00:00:00Z","conditions":[["content-length-range",1,2],{"a":"b"},["eq","$x","y"]]}`))
	f.Add([]byte(`{"expiration":"2030-01-01T00:00:00Z","conditions":[[]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		_ = p.Check(map[string]string{"key": "k"}, []string{"key"})
	})
}
