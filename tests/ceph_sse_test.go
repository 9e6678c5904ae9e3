//go:build rados

package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestCephSSEModes: the SSE end-to-end body on a gateway over Ceph, and the
// probe that no plaintext marker or SSE-C key is in the RADOS data pool.
func TestCephSSEModes(t *testing.T) {
	conf, _ := cephCluster(t)
	g := startRadosGateways(t, conf, 1, sseGatewayFlags()...)[0]
	pool := radosPrefixOf(t, g) + "default.rgw.buckets.data"
	sseModesBody(t, g, func(t *testing.T) func([]byte) []string {
		dir := dumpRadosPool(t, conf, pool)
		return func(needle []byte) []string { return dataDirContains(t, dir, needle) }
	})
}

// radosPrefixOf is the --ceph-pool-prefix g was started with.
func radosPrefixOf(t *testing.T, g *Gateway) string {
	for i, a := range g.args {
		if a == "--ceph-pool-prefix" && i+1 < len(g.args) {
			return g.args[i+1]
		}
	}
	t.Fatal("gateway has no --ceph-pool-prefix")
	return ""
}

// dumpRadosPool copies every object of pool (all namespaces) into a
// directory with the rados CLI: data and xattr values (data objects carry
// no omap).
func dumpRadosPool(t *testing.T, conf, pool string) string {
	t.Helper()
	rados := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command("rados", append([]string{"-c", conf, "-p", pool}, args...)...).Output()
		if err != nil {
			t.Fatalf("rados %v: %v", args, err)
		}
		return out
	}
	var objs []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	if err := json.Unmarshal(rados("--all", "--format", "json", "ls"), &objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("pool %s is empty", pool)
	}
	dir := t.TempDir()
	for i, o := range objs {
		ns := []string{"-N", o.Namespace}
		data := rados(append(ns, "get", o.Name, "-")...)
		var meta bytes.Buffer
		for _, x := range bytes.Fields(rados(append(ns, "listxattr", o.Name)...)) {
			meta.Write(rados(append(ns, "getxattr", o.Name, string(x))...))
		}
		name := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(name+".data", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name+".meta", meta.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("probe: %d objects of %s dumped", len(objs), pool)
	return dir
}
