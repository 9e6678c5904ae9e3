// Package pykmip starts a real PyKMIP server (pip: pykmip) for tests, with
// a throwaway CA, server and client certificates (ECDSA P-256), bound to
// 127.0.0.1 on a port below 32768. .ci/run installs PyKMIP; elsewhere a
// machine without it skips the tests (CAIRN_REQUIRE_KMIP=1 or CI=true
// make that a failure).
package pykmip

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

//go:embed server.py
var serverPy []byte

// Server is a running PyKMIP server and the files a client needs.
type Server struct {
	Addr          string // 127.0.0.1:port
	CA, Cert, Key string // PEM files of the CA and the client
	Dir           string
	cmd           *exec.Cmd
}

// Available reports whether python3 can import PyKMIP.
func Available() error {
	out, err := exec.Command("python3", "-c", "import kmip").CombinedOutput()
	if err != nil {
		return fmt.Errorf("python3 cannot import kmip (pip install pykmip): %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Require skips t when PyKMIP is missing, unless CAIRN_REQUIRE_KMIP or CI
// is set (then it fails).
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CAIRN_REQUIRE_KMIP") != "" || os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// Start starts a server in a temporary directory; it is stopped when t
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	s := &Server{Dir: dir, CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "client.pem"), Key: filepath.Join(dir, "client.key")}
	if err := writeCerts(dir); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "server.py")
	if err := os.WriteFile(script, serverPy, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.start(port); err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(s.Stop)
		return s
	}
	t.Fatalf("pykmip: %v", lastErr)
	return nil
}

func (s *Server) start(port int) error {
	conf := filepath.Join(s.Dir, "server.conf")
	db := filepath.Join(s.Dir, fmt.Sprintf("db-%d.sqlite", port))
	err := os.WriteFile(conf, []byte(fmt.Sprintf(`[server]
hostname=127.0.0.1
port=%d
certificate_path=%s
key_path=%s
ca_path=%s
auth_suite=TLS1.2
policy_path=%s
enable_tls_client_auth=True
logging_level=INFO
database_path=%s
`, port, filepath.Join(s.Dir, "server.pem"), filepath.Join(s.Dir, "server.key"), s.CA, filepath.Join(s.Dir, "policies"), db)), 0o644)
	if err != nil {
		return err
	}
	logPath := filepath.Join(s.Dir, "server.log")
	cmd := exec.Command("python3", filepath.Join(s.Dir, "server.py"), conf, logPath)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := os.Create(filepath.Join(s.Dir, "stderr.txt"))
	if err != nil {
		return err
	}
	cmd.Stderr = stderr
	// PyKMIP forks a multiprocessing manager: its own process group lets
	// Stop end both, and WaitDelay bounds a wait on pipes a child holds.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	// READY comes after the bind; EOF means the server died.
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "READY" {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		msg, _ := os.ReadFile(stderr.Name())
		logTail, _ := os.ReadFile(logPath)
		return fmt.Errorf("server did not start on port %d: %s %s", port, tail(msg), tail(logTail))
	}
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(discard{}) }()
	s.cmd = cmd
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop kills the server (its process group, which it leads) and waits
// for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// freePort picks a port in 20000..32767 that is free right now.
func freePort() (int, error) {
	for i := 0; i < 50; i++ {
		n, err := rand.Int(rand.Reader, big.NewInt(32767-20000))
		if err != nil {
			return 0, err
		}
		port := 20000 + int(n.Int64())
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port below 32768")
}

// writeCerts writes ca.pem, server.{pem,key} (SAN 127.0.0.1, serverAuth)
// and client.{pem,key} (CN cairn, clientAuth: PyKMIP requires the usage
// and makes the CN the owner of the keys the client creates).
func writeCerts(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cairn test KMIP CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	leaf := func(name string, serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(filepath.Join(dir, name+".key"), "EC PRIVATE KEY", kder)
	}
	if err := leaf("server", 2, "127.0.0.1", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return err
	}
	return leaf("client", 3, "cairn", x509.ExtKeyUsageClientAuth, nil)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
