package tests

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestGatewayPreloadsJemalloc: with libjemalloc.so.2 installed (.ci/run
// installs it), `cairn serve` on the embedded backend runs on jemalloc
// (malloc=auto re-executes it with the library preloaded, same pid), and
// with --malloc system it does not.
func TestGatewayPreloadsJemalloc(t *testing.T) {
	needJemalloc(t)
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

// TestGatewayJemallocHugePages: by default the preloaded jemalloc gets
// MALLOC_CONF thp:always (huge-pages), and under the kernel's THP mode
// madvise it marks its mappings for huge pages (VmFlags hg); with
// --huge-pages=false it does neither, and a MALLOC_CONF of the user's
// wins over the option.
func TestGatewayJemallocHugePages(t *testing.T) {
	needJemalloc(t)
	mode := ""
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil {
		if _, rest, ok := strings.Cut(string(b), "["); ok {
			mode, _, _ = strings.Cut(rest, "]")
		}
	}
	for _, c := range []struct {
		args     []string
		userConf string
		conf     string
	}{
		{nil, "", "thp:always,metadata_thp:always"},
		{[]string{"--huge-pages=false"}, "", ""},
		{nil, "narenas:2", "narenas:2"},
	} {
		if c.userConf != "" {
			t.Setenv("MALLOC_CONF", c.userConf)
		}
		g := StartGateway(t, c.args...)
		pid := g.cmd.Process.Pid
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		conf := ""
		for _, kv := range strings.Split(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, "MALLOC_CONF="); ok {
				conf = v
			}
		}
		if conf != c.conf {
			t.Fatalf("serve %v (MALLOC_CONF %q): jemalloc's MALLOC_CONF %q, want %q", c.args, c.userConf, conf, c.conf)
		}
		if mode == "madvise" && c.userConf == "" {
			smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
			if err != nil {
				t.Fatal(err)
			}
			marked := false
			for _, line := range strings.Split(string(smaps), "\n") {
				if f, ok := strings.CutPrefix(line, "VmFlags:"); ok && slices.Contains(strings.Fields(f), "hg") {
					marked = true
				}
			}
			if want := c.conf != ""; marked != want {
				t.Fatalf("serve %v: a mapping marked for huge pages %v, want %v", c.args, marked, want)
			}
		}
		g.Stop()
	}
}

// needJemalloc skips t unless the gateway can preload jemalloc (Linux,
// libjemalloc.so.2 installed); with CAIRN_REQUIRE_CLIENTS a missing
// library fails it.
func needJemalloc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("preloading is Linux only")
	}
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2", "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"} {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	if os.Getenv("CAIRN_REQUIRE_CLIENTS") != "" {
		t.Fatal("libjemalloc.so.2 is not installed (.ci/run installs libjemalloc2)")
	}
	t.Skip("libjemalloc.so.2 is not installed")
}
