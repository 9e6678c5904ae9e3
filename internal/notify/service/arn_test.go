package service

import (
	"fmt"
	"testing"
)

// A notified write names its topic by ARN: parsed once per ARN, then
// looked up without allocating (the parse split the ARN on every write).
func TestQueueForARNCached(t *testing.T) {
	s := &Service{}
	for _, tc := range []struct{ arn, want string }{
		{"arn:aws:sns:default::bench11", ":bench11"},
		{"arn:aws:sns:default:acme:t-1", "acme:t-1"},
		{"arn:aws:sns:default::bad.name", ""},
		{"not-an-arn", ""},
	} {
		for range 2 { // parsed, then cached
			if got := s.queueForARN(tc.arn); got != tc.want {
				t.Fatalf("queueForARN(%q) = %q, want %q", tc.arn, got, tc.want)
			}
		}
	}
	arn := "arn:aws:sns:default::bench1"
	s.queueForARN(arn)
	if n := testing.AllocsPerRun(100, func() { _ = s.queueForARN(arn) }); n != 0 {
		t.Fatalf("cached lookup: %.0f allocations, want 0", n)
	}
	// Bounded: past maxARNs the cache starts over, answers unchanged.
	for i := range maxARNs + 10 {
		if got, want := s.queueForARN(fmt.Sprintf("arn:aws:sns:default::t%d", i)), fmt.Sprintf(":t%d", i); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if n := s.arnCount.Load(); n > maxARNs {
		t.Fatalf("%d cached ARNs, bound %d", n, maxARNs)
	}
}
