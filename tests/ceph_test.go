//go:build rados

package tests

// Several `cairn serve --backend rados` processes over one Ceph cluster
// (scripts/ceph/cluster.sh: 1 mon, 1 mgr, 3 OSDs, pools of size 3 /
// min_size 2). Run with `make test-ceph`.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func init() { buildTags = append(buildTags, "rados") }

var cephFixture struct {
	once      sync.Once
	conf, dir string
	err       error
}

// cephCluster returns the ceph.conf and directory of the cluster the tests
// share: $CAIRN_CEPH_CONF (a cluster.sh directory), or one started on first
// use and stopped after all tests. Without Ceph the test skips, or fails
// under CAIRN_REQUIRE_CEPH=1.
func cephCluster(t *testing.T) (conf, dir string) {
	t.Helper()
	f := &cephFixture
	f.once.Do(func() {
		if c := os.Getenv("CAIRN_CEPH_CONF"); c != "" {
			f.conf, f.dir = c, filepath.Dir(c)
			return
		}
		if _, err := exec.LookPath("ceph-mon"); err != nil {
			f.err = err
			return
		}
		dir, err := os.MkdirTemp("", "cairn-ceph-tests-")
		if err != nil {
			f.err = err
			return
		}
		script, _ := filepath.Abs("../scripts/ceph/cluster.sh")
		cmd := exec.Command(script, "start", dir)
		// Ports apart from the radosstore package's cluster; a mgr reports
		// PG states (the OSD test waits for active+clean); no recovery sleep
		// (Ceph's 0.1 s per op for "hdd" OSDs makes recovery take minutes).
		cmd.Env = append(os.Environ(), "CEPH_MON_PORT=13310", "CEPH_OSD_PORTS=17000-17199", "CEPH_RECOVERY_SLEEP=0")
		if _, err := exec.LookPath("ceph-mgr"); err == nil {
			cmd.Env = append(cmd.Env, "CEPH_MGR=1")
		}
		out, err := cmd.CombinedOutput()
		afterAll = append(afterAll, func() {
			_ = exec.Command(script, "stop", dir).Run()
			os.RemoveAll(dir)
		})
		if err != nil {
			f.err = fmt.Errorf("cluster.sh start: %v\n%s", err, out)
			return
		}
		f.conf, f.dir = filepath.Join(dir, "ceph.conf"), dir
	})
	if f.err != nil {
		if os.Getenv("CAIRN_REQUIRE_CEPH") == "1" {
			t.Fatalf("Ceph required: %v", f.err)
		}
		t.Skipf("no Ceph cluster: %v", f.err)
	}
	return f.conf, f.dir
}

var cephPrefixSeq atomic.Int64

// startRadosGateways starts n gateways over conf, one after another (the
// first creates the pools and the admin user), sharing a pool prefix of
// their own so tests do not see each other's data.
func startRadosGateways(t *testing.T, conf string, n int, extra ...string) []*Gateway {
	t.Helper()
	prefix := fmt.Sprintf("t%d-%d.", os.Getpid(), cephPrefixSeq.Add(1))
	gws := make([]*Gateway, n)
	for i := range gws {
		gws[i] = StartGateway(t, append([]string{"--backend", "rados", "--ceph-conf", conf, "--ceph-pool-prefix", prefix}, extra...)...)
	}
	return gws
}

// metric reads one unlabelled sample from a gateway's /metrics (-1 if the
// gateway does not answer).
func metric(g *Gateway, name string) float64 {
	resp, err := http.DefaultClient.Do(metricsRequest(g))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

const ownedMetric = "cairn_notify_delivery_shards_owned"

// TestCephGatewaysNotifications: three gateways on one cluster share a
// persistent topic's queue shards; one is killed with SIGKILL under a PUT
// load; the survivors take its shards over within the lease and every
// acknowledged PUT's event reaches a real HTTP receiver.
func TestCephGatewaysNotifications(t *testing.T) {
	conf, _ := cephCluster(t)
	const shards, lease, scan = 6, 3 * time.Second, time.Second
	rv := newReceiver(t)
	gws := startRadosGateways(t, conf, 3, "--notif-shards", strconv.Itoa(shards),
		"--notif-scan-interval", scan.String(), "--notif-lease", lease.String())
	out := awsCLI(t, gws[0], "sns", "create-topic", "--name=gwtopic",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	arn := jsonField(t, out, "TopicArn")
	awsCLI(t, gws[1], "s3api", "create-bucket", "--bucket", "multi")
	awsCLI(t, gws[2], "s3api", "put-bucket-notification-configuration", "--bucket", "multi",
		`--notification-configuration={"TopicConfigurations": [{"Id": "n1", "TopicArn": "`+arn+`", "Events": ["s3:ObjectCreated:*"]}]}`)

	owned := func(gs []*Gateway) (per []int, sum int) {
		for _, g := range gs {
			n := int(metric(g, ownedMetric))
			per = append(per, n)
			sum += n
		}
		return per, sum
	}
	// The shards spread: every gateway delivers some, none twice.
	deadline := time.Now().Add(30 * time.Second)
	for {
		per, sum := owned(gws)
		if sum == shards && per[0] > 0 && per[1] > 0 && per[2] > 0 {
			t.Logf("shards owned per gateway: %v", per)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards did not spread over 3 gateways: owned %v", per)
		}
		time.Sleep(200 * time.Millisecond)
	}

	clients := make([]*s3.Client, len(gws))
	for i, g := range gws {
		clients[i] = sdkClient(g, g.AccessKey, g.SecretKey)
	}
	var killed atomic.Bool
	var mu sync.Mutex
	acked := map[string]bool{}
	var failed atomic.Int64
	stop := loadWorkers(6, func(w, i int) {
		gi := (w + i) % 3
		if gi == 2 && killed.Load() {
			gi = w % 2
		}
		key := fmt.Sprintf("w%d-%d", w, i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := clients[gi].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("multi"), Key: aws.String(key), Body: strings.NewReader(key)})
		cancel()
		if err != nil {
			failed.Add(1)
			return
		}
		mu.Lock()
		acked[key] = true
		mu.Unlock()
	})
	time.Sleep(2 * time.Second)
	gws[2].Kill()
	tKill := time.Now()
	killed.Store(true)
	// Takeover: the survivors own every shard again.
	var takeover time.Duration
	for {
		per, sum := owned(gws[:2])
		if sum == shards {
			takeover = time.Since(tKill)
			t.Logf("survivors own %v shards %.1fs after kill -9 (lease %v, scan %v)", per, takeover.Seconds(), lease, scan)
			break
		}
		if time.Since(tKill) > 60*time.Second {
			t.Fatalf("dead gateway's shards not taken over after 60s: survivors own %v", per)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // load continues on the survivors
	stop()
	// Owning a lease that expired needs lease + one scan (+ the scan the
	// kill fell into); more would mean the lease is not what moves shards.
	if limit := lease + 2*scan + 2*time.Second; takeover > limit {
		t.Errorf("takeover took %v, over lease+2 scans (+2s) = %v", takeover, limit)
	}

	mu.Lock()
	want := len(acked)
	mu.Unlock()
	if want == 0 {
		t.Fatal("no PUT acknowledged: the test proved nothing")
	}
	deadline = time.Now().Add(90 * time.Second)
	for {
		got := map[string]int{}
		for _, r := range rv.snapshot() {
			if k, ok := field(r, "s3", "object", "key").(string); ok {
				got[k]++
			}
		}
		var missing []string
		dups := 0
		for k := range acked {
			if got[k] == 0 {
				missing = append(missing, k)
			}
			if got[k] > 1 {
				dups++
			}
		}
		if len(missing) == 0 {
			t.Logf("%d acknowledged PUTs (%d failed: the killed gateway's), all %d events delivered (%d keys delivered more than once)",
				want, failed.Load(), want, dups)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged PUT events never arrived, e.g. %v", len(missing), want, missing[:min(5, len(missing))])
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pgStates returns the cluster's PG counts by state (needs a ceph-mgr).
func pgStates(conf string) (map[string]int, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ceph", "-c", conf, "pg", "stat", "-f", "json").Output()
	if err != nil {
		return nil, 0, err
	}
	var st struct {
		Summary struct {
			ByState []struct {
				Name string `json:"name"`
				Num  int    `json:"num"`
			} `json:"num_pg_by_state"`
			NumPGs int `json:"num_pgs"`
		} `json:"pg_summary"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, 0, fmt.Errorf("pg stat: %v: %s", err, out)
	}
	m := map[string]int{}
	for _, s := range st.Summary.ByState {
		m[s.Name] = s.Num
	}
	return m, st.Summary.NumPGs, nil
}

func waitClean(t *testing.T, conf string, timeout time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	lastLog := t0
	for {
		m, n, err := pgStates(conf)
		if err == nil && n > 0 && m["active+clean"] == n {
			return time.Since(t0)
		}
		if time.Since(lastLog) > 10*time.Second {
			t.Logf("%.0fs: PG states %v", time.Since(t0).Seconds(), m)
			lastLog = time.Now()
		}
		if time.Since(t0) > timeout {
			t.Fatalf("cluster not clean after %v: %v (%d PGs) %v", timeout, m, n, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestCephOSDFailure: pools of size 3 / min_size 2; one OSD stops during a
// mixed load through two gateways. Every request keeps succeeding, every
// acknowledged write reads back, and the time until all PGs are
// active+clean after the OSD returns is reported.
func TestCephOSDFailure(t *testing.T) {
	conf, dir := cephCluster(t)
	if _, err := os.Stat(filepath.Join(dir, "run", "mgr.x.pid")); err != nil {
		// Without a mgr no PG states are reported.
		if os.Getenv("CAIRN_REQUIRE_CEPH") == "1" {
			t.Fatalf("no ceph-mgr in the cluster (apt-get install ceph-mgr): %v", err)
		}
		t.Skipf("no ceph-mgr in the cluster: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "osd.2.pid")); err != nil {
		t.Skipf("cluster in %s was not started by scripts/ceph/cluster.sh: %v", dir, err)
	}
	script, _ := filepath.Abs("../scripts/ceph/cluster.sh")
	gws := startRadosGateways(t, conf, 2)
	c0 := sdkClient(gws[0], gws[0].AccessKey, gws[0].SecretKey)
	if _, err := c0.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("osdfail")}); err != nil {
		t.Fatal(err)
	}
	// Pools as created on first start: replicated, size 3, min_size 2.
	out, err := exec.Command("ceph", "-c", conf, "osd", "pool", "ls", "detail", "-f", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var pools []struct {
		Name    string `json:"pool_name"`
		Size    int    `json:"size"`
		MinSize int    `json:"min_size"`
	}
	if err := json.Unmarshal(out, &pools); err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		if p.Size != 3 || p.MinSize != 2 {
			t.Fatalf("pool %s: size %d min_size %d, want 3/2", p.Name, p.Size, p.MinSize)
		}
	}
	waitClean(t, conf, 60*time.Second)

	clients := []*s3.Client{c0, sdkClient(gws[1], gws[1].AccessKey, gws[1].SecretKey)}
	var mu sync.Mutex
	acked := map[string]string{} // key -> body of the last acknowledged PUT
	var ops, failures atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	stop := loadWorkers(4, func(w, i int) {
		c := clients[w%2]
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		key := fmt.Sprintf("w%d-%d", w, i%50)
		body := fmt.Sprintf("%s@%d", key, i)
		switch i % 4 {
		case 0, 1: // PUT
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("osdfail"), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
				fail(err)
			} else {
				mu.Lock()
				acked[key] = body
				mu.Unlock()
			}
		case 2: // GET an acknowledged key of this worker (no concurrent writer)
			k := fmt.Sprintf("w%d-%d", w, (i/4)%50)
			mu.Lock()
			want, ok := acked[k]
			mu.Unlock()
			if !ok {
				break
			}
			r, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("osdfail"), Key: aws.String(k)})
			if err != nil {
				fail(err)
				break
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if string(b) != want {
				fail(fmt.Errorf("GET %s = %q, want %q", k, b, want))
			}
		case 3: // LIST
			if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("osdfail"), MaxKeys: aws.Int32(100)}); err != nil {
				fail(err)
			}
		}
		cancel()
		ops.Add(1)
	})
	rate := func(d time.Duration) float64 {
		n0 := ops.Load()
		time.Sleep(d)
		return float64(ops.Load()-n0) / d.Seconds()
	}
	before := rate(3 * time.Second)
	if out, err := exec.Command(script, "stop-osd", dir, "2").CombinedOutput(); err != nil {
		t.Fatalf("stop osd.2: %v %s", err, out)
	}
	tStop := time.Now()
	t.Cleanup(func() { _ = exec.Command(script, "start-osd", dir, "2").Run() }) // if the test fails before restarting it
	degraded := rate(5 * time.Second)
	if out, err := exec.Command(script, "start-osd", dir, "2").CombinedOutput(); err != nil {
		t.Fatalf("start osd.2: %v %s", err, out)
	}
	down := time.Since(tStop)
	clean := waitClean(t, conf, 5*time.Minute)
	after := rate(2 * time.Second)
	stop()
	t.Logf("ops/s: %.0f before, %.0f with osd.2 down (%.1fs), %.0f after; cluster active+clean %.1fs after osd.2 restarted; %d ops, %d failed",
		before, degraded, down.Seconds(), after, clean.Seconds(), ops.Load(), failures.Load())
	if n := failures.Load(); n > 0 {
		t.Errorf("%d requests failed during the OSD outage, first: %v", n, firstErr.Load())
	}
	if degraded == 0 {
		t.Errorf("no request completed while osd.2 was down")
	}
	// Every acknowledged write reads back, through the other gateway.
	c1 := clients[1]
	for k, want := range acked {
		r, err := c1.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("osdfail"), Key: aws.String(k)})
		if err != nil {
			t.Fatalf("GET %s after recovery: %v", k, err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if string(b) != want {
			t.Fatalf("GET %s after recovery = %q, want %q (acknowledged)", k, b, want)
		}
	}
	t.Logf("%d acknowledged keys read back after recovery", len(acked))
}

// TestCephGatewaysReshard: three gateways on one cluster, writers on two of
// them; two gateways are asked to reshard the same bucket at once. One
// reshard runs at a time (the other is refused as in progress, or runs
// after it, from its result), writers keep being served, and every
// acknowledged key is listed afterwards through the third gateway.
func TestCephGatewaysReshard(t *testing.T) {
	conf, _ := cephCluster(t)
	gws := startRadosGateways(t, conf, 3, "--bucket-index-shards", "3", "--dynamic-resharding=false")
	clients := make([]*s3.Client, len(gws))
	for i, g := range gws {
		clients[i] = sdkClient(g, g.AccessKey, g.SecretKey)
	}
	ctx := context.Background()
	if _, err := clients[0].CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("reshard-multi")}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	var failed atomic.Int64
	var firstErr atomic.Value
	put := func(c *s3.Client, key string) {
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if _, err := c.PutObject(pctx, &s3.PutObjectInput{Bucket: aws.String("reshard-multi"), Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
			return
		}
		mu.Lock()
		acked[key] = true
		mu.Unlock()
	}
	// Prefill, so the copy has something to do.
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				put(clients[w%3], fmt.Sprintf("pre/%d-%d", w, i))
			}
		}(w)
	}
	wg.Wait()
	stop := loadWorkers(4, func(w, i int) {
		put(clients[1+w%2], fmt.Sprintf("live/%d-%d", w, i))
	})
	time.Sleep(time.Second)
	type outcome struct {
		out string
		err error
	}
	res := make([]outcome, 2)
	var rw sync.WaitGroup
	for i, n := range []string{"7", "5"} {
		rw.Add(1)
		go func(i int, n string) {
			defer rw.Done()
			time.Sleep(time.Duration(i) * 100 * time.Millisecond)
			out, err := gws[i].Admin("bucket", "reshard", "--bucket", "reshard-multi", "--num-shards", n)
			res[i] = outcome{out, err}
		}(i, n)
	}
	rw.Wait()
	time.Sleep(time.Second) // writers continue after the switch
	stop()
	for i, r := range res {
		t.Logf("gateway %d reshard: %s %v", i, strings.TrimSpace(r.out), r.err)
	}
	switch {
	case res[0].err == nil && res[1].err == nil:
		// Both ran: one after the other, the second from the first's result.
		from := [2]float64{}
		for i, r := range res {
			var v struct {
				From float64 `json:"from_shards"`
			}
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Fatalf("reshard result: %v %s", err, r.out)
			}
			from[i] = v.From
		}
		if !(from[0] == 3 && from[1] == 7) && !(from[1] == 3 && from[0] == 5) {
			t.Fatalf("both reshards ran but not one after the other: from %v", from)
		}
	case res[0].err != nil && res[1].err != nil:
		t.Fatalf("both reshards failed: %v / %v", res[0].err, res[1].err)
	default:
		for _, r := range res {
			if r.err != nil && !strings.Contains(r.err.Error(), "ReshardInProgress") {
				t.Fatalf("the refused reshard failed for another reason: %v", r.err)
			}
		}
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d PUTs failed during the reshard, first: %v", n, firstErr.Load())
	}
	// Every acknowledged key is listed, through the third gateway.
	listed := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(clients[2], &s3.ListObjectsV2Input{Bucket: aws.String("reshard-multi")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			listed[*o.Key] = true
		}
	}
	for k := range acked {
		if !listed[k] {
			t.Fatalf("acknowledged key %s not listed after the reshard (%d listed, %d acknowledged)", k, len(listed), len(acked))
		}
	}
	stats, err := gws[2].Admin("bucket", "stats", "--bucket", "reshard-multi")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged keys all listed after the reshard; bucket stats %s", len(acked), strings.TrimSpace(stats))
}
