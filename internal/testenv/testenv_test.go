package testenv

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// alive: the process exists and is not a zombie (kafka.sh's stop returns
// once its broker is dead; whoever reaps it may do so later).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	return err != nil || !strings.Contains(string(st), "\nState:\tZ")
}

func dial(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.Close()
}

func TestSharedKafka(t *testing.T) {
	addr := StartKafka(t)
	dial(t, addr)
	if again := StartKafka(t); again != addr {
		t.Fatalf("second StartKafka started another broker: %s vs %s", again, addr)
	}
}

func TestSharedRabbitMQ(t *testing.T) {
	url := StartRabbitMQ(t)
	b := shared["rabbitmq"]
	dial(t, b.Addr)
	if url != "amqp://guest:guest@"+b.Addr+"/" {
		t.Fatal(url)
	}
}

func TestPrivateStopRestart(t *testing.T) {
	b := NewKafka(t)
	pid := b.Pid()
	if !alive(pid) {
		t.Fatal("not running")
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatal("still running after Stop")
	}
	if _, err := net.DialTimeout("tcp", b.Addr, time.Second); err == nil {
		t.Fatal("port still open after Stop")
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	dial(t, b.Addr)
	t.Logf("restart took %v", b.StartTime)
}

func TestRequireEnv(t *testing.T) {
	if os.Getenv(RequireEnv) == "1" {
		t.Skip("only meaningful without " + RequireEnv)
	}
	// unavailable skips without the variable; run it in a subtest.
	var skipped bool
	t.Run("sub", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		unavailable(t, "nothing here")
	})
	if !skipped {
		t.Fatal("not skipped")
	}
}
