package objectlock

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return "untyped"
	}
	return ""
}

func TestParseConfiguration(t *testing.T) {
	cases := []struct{ body, want string }{
		{`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>`, ""},
		{`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>3</Days></DefaultRetention></Rule></ObjectLockConfiguration>`, ""},
		{`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>1</Years></DefaultRetention></Rule></ObjectLockConfiguration>`, ""},
		{`<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>`, "MalformedXML"},
		{`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>X</Mode><Days>3</Days></DefaultRetention></Rule></ObjectLockConfiguration>`, "MalformedXML"},
		{`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>3</Days><Years>1</Years></DefaultRetention></Rule></ObjectLockConfiguration>`, "MalformedXML"},
		{`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>0</Days></DefaultRetention></Rule></ObjectLockConfiguration>`, "InvalidRetentionPeriod"},
		{`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Years>-1</Years></DefaultRetention></Rule></ObjectLockConfiguration>`, "InvalidRetentionPeriod"},
		{`<ObjectLock`, "MalformedXML"},
	}
	for _, c := range cases {
		cfg, err := ParseConfiguration([]byte(c.body))
		if got := code(err); got != c.want {
			t.Errorf("%s: code %q, want %q", c.body, got, c.want)
			continue
		}
		if err == nil {
			out, err := cfg.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParseConfiguration(out); err != nil {
				t.Errorf("round trip: %v\n%s", err, out)
			}
		}
	}
}

func TestDefaultRetention(t *testing.T) {
	cfg, err := ParseConfiguration([]byte(`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>3</Days></DefaultRetention></Rule></ObjectLockConfiguration>`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := cfg.Default(now)
	if r.Mode != Governance || !r.Until.Equal(now.AddDate(0, 0, 3)) {
		t.Fatalf("Default = %+v", r)
	}
	var none *Configuration
	if none.Default(now) != (Retention{}) {
		t.Fatal("nil configuration gave a retention")
	}
}

func TestCheck(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	gov := Retention{Mode: Governance, Until: later}
	comp := Retention{Mode: Compliance, Until: later}
	cases := []struct {
		name   string
		r      Retention
		hold   bool
		bypass bool
		now    time.Time
		want   string
	}{
		{"none", Retention{}, false, false, now, ""},
		{"governance", gov, false, false, now, "AccessDenied"},
		{"governance bypass", gov, false, true, now, ""},
		{"compliance", comp, false, true, now, "AccessDenied"},
		{"compliance expired", comp, false, false, later, ""},
		{"legal hold", Retention{}, true, true, now, "AccessDenied"},
	}
	for _, c := range cases {
		if got := code(Check(c.r, c.hold, c.bypass, c.now)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Retention changes.
	longer := Retention{Mode: Compliance, Until: later.Add(time.Hour)}
	if err := CheckRetentionChange(comp, longer, false, now); err != nil {
		t.Errorf("extending compliance refused: %v", err)
	}
	if code(CheckRetentionChange(comp, Retention{Mode: Compliance, Until: now.Add(time.Minute)}, true, now)) != "AccessDenied" {
		t.Error("shortening compliance allowed")
	}
	if code(CheckRetentionChange(comp, Retention{Mode: Governance, Until: later.Add(time.Hour)}, true, now)) != "AccessDenied" {
		t.Error("compliance -> governance allowed")
	}
	if code(CheckRetentionChange(gov, Retention{}, false, now)) != "AccessDenied" {
		t.Error("removing governance without bypass allowed")
	}
	if err := CheckRetentionChange(gov, Retention{}, true, now); err != nil {
		t.Errorf("removing governance with bypass refused: %v", err)
	}
	// GOVERNANCE -> COMPLIANCE is a change of a governance retention:
	// bypass only (AWS, RGW).
	if code(CheckRetentionChange(gov, longer, false, now)) != "AccessDenied" {
		t.Error("governance -> longer compliance allowed without bypass")
	}
	if err := CheckRetentionChange(gov, longer, true, now); err != nil {
		t.Errorf("governance -> longer compliance with bypass refused: %v", err)
	}
	if err := CheckRetentionChange(gov, Retention{Mode: Governance, Until: later.Add(time.Hour)}, false, now); err != nil {
		t.Errorf("extending governance refused: %v", err)
	}
}

func TestHeaders(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	if _, present, err := ParseHeaders(h, now); present || err != nil {
		t.Fatalf("no headers: %v %v", present, err)
	}
	h.Set("x-amz-object-lock-mode", "GOVERNANCE")
	if _, _, err := ParseHeaders(h, now); code(err) != "InvalidArgument" {
		t.Fatalf("mode without date: %v", err)
	}
	h.Set("x-amz-object-lock-retain-until-date", "2025-01-01T00:00:00Z")
	if _, _, err := ParseHeaders(h, now); code(err) != "InvalidArgument" {
		t.Fatalf("date in the past: %v", err)
	}
	h.Set("x-amz-object-lock-retain-until-date", "2027-01-01T00:00:00Z")
	h.Set("x-amz-object-lock-legal-hold", "ON")
	hs, present, err := ParseHeaders(h, now)
	if err != nil || !present || hs.Retention.Mode != Governance || hs.LegalHold == nil || !*hs.LegalHold {
		t.Fatalf("ParseHeaders = %+v %v %v", hs, present, err)
	}
	h.Set("x-amz-object-lock-legal-hold", "maybe")
	if _, _, err := ParseHeaders(h, now); code(err) != "InvalidArgument" {
		t.Fatalf("bad legal hold: %v", err)
	}
}

func TestRetentionAndHoldDocuments(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r, err := ParseRetention([]byte(`<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>2026-02-01T00:00:00Z</RetainUntilDate></Retention>`), now)
	if err != nil || r.Mode != Compliance {
		t.Fatalf("ParseRetention = %+v %v", r, err)
	}
	out, _ := MarshalRetention(r)
	if back, err := ParseRetention(out, now); err != nil || back != r {
		t.Fatalf("round trip %+v %v\n%s", back, err, out)
	}
	on, err := ParseLegalHold([]byte(`<LegalHold><Status>ON</Status></LegalHold>`))
	if err != nil || !on {
		t.Fatalf("ParseLegalHold = %v %v", on, err)
	}
	if _, err := ParseLegalHold([]byte(`<LegalHold><Status>on</Status></LegalHold>`)); code(err) != "MalformedXML" {
		t.Fatalf("lower-case status: %v", err)
	}
}
