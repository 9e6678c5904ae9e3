// Package testenv starts real brokers (Kafka, RabbitMQ) for tests, through
// the scripts in tests/brokers.
//
// Shared brokers (StartKafka, StartRabbitMQ) start once per test binary and
// stop when Main's m.Run returns; without Main they stop in the calling
// test's Cleanup. Private brokers (NewKafka, NewRabbitMQ) belong to one
// test, which may stop and restart them.
//
// A broker that is not installed makes the test skip, unless the
// environment has CAIRN_REQUIRE_BROKERS=1 (CI sets it), which makes it fail.
// Every broker listens on 127.0.0.1 only, on ports below 32768, and a
// watchdog stops it if the test binary dies without cleaning up.
package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// RequireEnv is the variable that turns "broker not installed" into a failure.
const RequireEnv = "CAIRN_REQUIRE_BROKERS"

// Broker is one running (or stopped) broker started by this package.
type Broker struct {
	Kind string // "kafka" or "rabbitmq"
	// Addr is host:port of the client listener.
	Addr string
	// URL is the client URL: "amqp://guest:guest@127.0.0.1:P/" for
	// RabbitMQ, the same as Addr for Kafka.
	URL string
	// StartTime is how long the last start took.
	StartTime time.Duration

	script string
	dir    string
	tmpDir bool // dir is ours to remove after Stop
	port   int
	mu     sync.Mutex
	pid    int
	watch  *exec.Cmd
}

var (
	mu      sync.Mutex
	inMain  bool
	shared  = map[string]*Broker{}
	started []*Broker
)

// Main runs the tests and stops the shared brokers afterwards. Use it from
// TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	mu.Lock()
	inMain = true
	mu.Unlock()
	code := m.Run()
	mu.Lock()
	for _, b := range started {
		_ = b.Stop()
	}
	mu.Unlock()
	os.Exit(code)
}

// StartKafka returns the address (127.0.0.1:port) of the shared Kafka.
func StartKafka(t testing.TB) string { return startShared(t, "kafka").Addr }

// StartRabbitMQ returns the AMQP URL of the shared RabbitMQ node.
func StartRabbitMQ(t testing.TB) string { return startShared(t, "rabbitmq").URL }

// AMQPChannel dials url and opens a channel on the connection, which is
// closed when t ends.
func AMQPChannel(t testing.TB, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// NewKafka starts a Kafka only this test uses; it stops in t.Cleanup.
func NewKafka(t testing.TB) *Broker { return startPrivate(t, "kafka") }

// NewRabbitMQ starts a RabbitMQ node only this test uses; it stops in
// t.Cleanup.
func NewRabbitMQ(t testing.TB) *Broker { return startPrivate(t, "rabbitmq") }

func startShared(t testing.TB, kind string) *Broker {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if b := shared[kind]; b != nil {
		return b
	}
	b := launch(t, kind, "")
	if inMain {
		shared[kind] = b
		started = append(started, b)
	} else {
		t.Cleanup(func() { _ = b.Stop() })
	}
	return b
}

func startPrivate(t testing.TB, kind string) *Broker {
	t.Helper()
	b := launch(t, kind, t.TempDir())
	t.Cleanup(func() { _ = b.Stop() })
	return b
}

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// launch installs (Kafka jars only) and starts a broker or skips/fails t.
func launch(t testing.TB, kind, dir string) *Broker {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "tests", "brokers", kind+".sh")
	switch kind {
	case "kafka":
		if _, err := exec.LookPath("java"); err != nil {
			unavailable(t, "kafka: java not installed")
		}
		// Fetching the jars takes seconds and needs only Maven; tests install
		// what they need.
		if out, err := exec.Command(script, "install").CombinedOutput(); err != nil {
			unavailable(t, "kafka: install failed: %v\n%s", err, out)
		}
	case "rabbitmq":
		m, _ := filepath.Glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmqctl")
		if len(m) == 0 {
			unavailable(t, "rabbitmq-server not installed (apt-get install -y rabbitmq-server)")
		}
	}
	shared := dir == ""
	if shared {
		// Shared brokers outlive the test that started them.
		if dir, err = os.MkdirTemp("", "cairn-"+kind+"-"); err != nil {
			t.Fatal(err)
		}
	}
	b := &Broker{Kind: kind, script: script, dir: dir, tmpDir: shared}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		b.port = freePorts(7)
		if lastErr = b.start(); lastErr == nil {
			t.Logf("testenv: %s on %s started in %v", kind, b.Addr, b.StartTime.Round(time.Millisecond))
			return b
		}
	}
	t.Fatalf("testenv: start %s: %v", kind, lastErr)
	return nil
}

func (b *Broker) start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))
	b.URL = b.Addr
	if b.Kind == "rabbitmq" {
		b.URL = "amqp://guest:guest@" + b.Addr + "/"
	}
	t0 := time.Now()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(b.script, "start", b.dir, strconv.Itoa(b.port))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		_ = exec.Command(b.script, "stop", b.dir).Run()
		return fmt.Errorf("%v: %s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	b.StartTime = time.Since(t0)
	fields := strings.Fields(stdout.String())
	if len(fields) == 0 {
		return errors.New("start printed no pid")
	}
	pid, err := strconv.Atoi(fields[len(fields)-1])
	if err != nil {
		return fmt.Errorf("bad pid %q", stdout.String())
	}
	b.pid = pid
	// The watchdog stops the broker if this process dies without cleanup
	// (a test timeout panics past deferred calls).
	b.watch = exec.Command("sh", "-c",
		`while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec "$2" stop "$3"`,
		"watchdog", strconv.Itoa(os.Getpid()), b.script, b.dir)
	if err := b.watch.Start(); err != nil {
		b.watch = nil
	}
	return nil
}

// Pid is the broker's process id (0 when stopped).
func (b *Broker) Pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pid
}

// Stop stops the broker (by the pid its script recorded) and waits.
func (b *Broker) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pid == 0 {
		return nil
	}
	out, err := exec.Command(b.script, "stop", b.dir).CombinedOutput()
	b.pid = 0
	if b.watch != nil {
		_ = b.watch.Process.Kill() // our own child; the broker is already gone
		_ = b.watch.Wait()
		b.watch = nil
	}
	if err != nil {
		return fmt.Errorf("stop %s: %v: %s", b.Kind, err, out)
	}
	if b.tmpDir {
		_ = os.RemoveAll(b.dir)
	}
	return nil
}

// Restart starts a stopped broker again on the same port and data.
func (b *Broker) Restart() error {
	if b.Pid() != 0 {
		return errors.New("testenv: broker is running")
	}
	return b.start()
}

// freePorts returns p such that p..p+n-1 are free on 127.0.0.1 and below
// 32768 (the kernel's ephemeral range starts there; listeners inside it
// collide with outgoing connections).
func freePorts(n int) int {
	for {
		p := 20000 + rand.IntN(12000)
		ok := true
		var ls []net.Listener
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+i)))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return p
		}
	}
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tests", "brokers", "kafka.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: tests/brokers not found above the working directory")
		}
		dir = parent
	}
}
