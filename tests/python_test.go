package tests

import (
	"os"
	"os/exec"
	"testing"
)

// requireTool skips when a client is not installed, unless the run demands
// it (CI sets CAIRN_REQUIRE_CLIENTS=1, so a missing client fails there).
func requireTool(t *testing.T, name string, check ...string) {
	t.Helper()
	if err := exec.Command(name, check...).Run(); err != nil {
		if os.Getenv("CAIRN_REQUIRE_CLIENTS") == "1" {
			t.Fatalf("%s not available: %v", name, err)
		}
		t.Skipf("%s not available: %v", name, err)
	}
}

func TestPythonClients(t *testing.T) {
	requireTool(t, "python3", "-c", "import boto3, pytest")
	requireTool(t, "aws", "--version")
	// test_storage_classes.py needs the classes it writes to.
	pytest(t, StartGateway(t, "--storage-classes", "STANDARD_IA,GLACIER"), "python")
}

// pytest runs the given tests/python files (or directories) against g.
func pytest(t *testing.T, g *Gateway, paths ...string) {
	t.Helper()
	cmd := exec.Command("python3", append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider"}, paths...)...)
	cmd.Env = append(os.Environ(), "CAIRN_ENDPOINT="+g.Endpoint, "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey)
	out, err := cmd.CombinedOutput()
	t.Logf("pytest:\n%s", out)
	if err != nil {
		t.Fatalf("python client tests failed: %v\ngateway log tail:\n%s", err, tail(g.Log.String(), 4000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestPythonSSE runs tests/python_sse (boto3 and the aws CLI, every
// encryption mode) against a gateway with SSE-KMS test keys and SSE-C
// allowed over plain HTTP.
func TestPythonSSE(t *testing.T) {
	requireTool(t, "python3", "-c", "import boto3, pytest")
	requireTool(t, "aws", "--version")
	g := StartGateway(t, "--kms-keys", testKMSKeys(), "--crypt-require-tls=false")
	cmd := exec.Command("python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "python_sse")
	cmd.Env = append(os.Environ(), "CAIRN_ENDPOINT="+g.Endpoint, "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey, "CAIRN_DATA_DIR="+g.DataDir)
	out, err := cmd.CombinedOutput()
	t.Logf("pytest:\n%s", out)
	if err != nil {
		t.Fatalf("python SSE tests failed: %v\ngateway log tail:\n%s", err, tail(g.Log.String(), 4000))
	}
}
