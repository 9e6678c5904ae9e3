package tests

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestGatewayPreloadsJemalloc: with libjemalloc.so.2 installed (.ci/run
// installs it), `cairn serve` on the embedded backend runs on jemalloc
// (malloc=auto re-executes it with the library preloaded, same pid), and
// with --malloc system it does not.
func TestGatewayPreloadsJemalloc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("preloading is Linux only")
	}
	found := false
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2", "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"} {
		if _, err := os.Stat(p); err == nil {
			found = true
		}
	}
	if !found {
		if os.Getenv("CAIRN_REQUIRE_CLIENTS") != "" {
			t.Fatal("libjemalloc.so.2 is not installed (.ci/run installs libjemalloc2)")
		}
		t.Skip("libjemalloc.so.2 is not installed")
	}
	for _, c := range []struct {
		args []string
		want bool
	}{{nil, true}, {[]string{"--malloc", "system"}, false}} {
		g := StartGateway(t, c.args...)
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", g.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(maps), "libjemalloc"); got != c.want {
			t.Fatalf("serve %v: jemalloc mapped %v, want %v", c.args, got, c.want)
		}
		g.Stop()
	}
}
