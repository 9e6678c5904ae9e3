package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name, v, c string
		bi         *debug.BuildInfo
		want       Info
	}{
		{"ldflags win", "v1.2.3", "deadbeef", bi, Info{"v1.2.3", "deadbeef", "go1.26.1"}},
		{"go build's VCS stamp", "", "", bi, Info{"devel", "abc123+dirty", "go1.26.1"}},
		{"go install of a module version", "", "", &debug.BuildInfo{GoVersion: "go1.26.2", Main: debug.Module{Version: "v0.4.0"}}, Info{"v0.4.0", "unknown", "go1.26.2"}},
	} {
		if got := get(tc.v, tc.c, tc.bi); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := get("", "", nil); got.Version != "devel" || got.Commit != "unknown" || !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("no build info: %+v", got)
	}
	if s := (Info{"v1", "c1", "go1.26.1"}).String(); s != "cairn v1 (commit c1, go1.26.1)" {
		t.Errorf("String: %q", s)
	}
}
