package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestKillDashNineLosesNothingAcknowledged runs a PUT/overwrite/DELETE load,
// SIGKILLs the gateway mid-load, restarts it on the same data directory and
// checks: every acknowledged PUT is listed and readable with its content,
// every listed object is readable (nothing listed-but-missing), acknowledged
// deletes stay deleted, the bucket stats agree with the listing, and every
// visible object's ObjectCreated event was delivered.
func TestKillDashNineLosesNothingAcknowledged(t *testing.T) {
	rv := newReceiver(t)
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	bucket := aws.String("crash-bucket")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	// Every write is notified through a persistent topic: after the kill,
	// each visible version must have its event, acknowledged or not.
	notifyBucket(t, g, rv, "crash-bucket")
	var mu sync.Mutex
	acked := map[string]string{} // key → content last acknowledged ("" = deleted)
	// uncertain: keys whose last operation failed (in flight at the kill):
	// it may or may not have landed, so their state is not exact. Each key
	// belongs to one worker, whose operations on it are sequential.
	uncertain := map[string]bool{}
	done := func(key, content string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			uncertain[key] = true
			return
		}
		acked[key] = content
		delete(uncertain, key)
	}
	stop := loadWorkers(8, func(w, i int) {
		key := fmt.Sprintf("w%d/k%04d", w, i%50)
		body := fmt.Sprintf("%s#%d", key, i)
		if i%7 == 6 {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(key)})
			done(key, "", err)
			return
		}
		size := 100
		if i%10 == 0 {
			size = 5 << 20 // multi-stripe objects too
		}
		data := []byte(body + strings.Repeat("x", size))
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: bytes.NewReader(data)})
		done(key, string(data), err)
	})
	// Kill once enough writes were acknowledged (a fixed sleep acknowledged
	// none on a loaded machine), with the workers still going.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged in 3 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.Kill()
	stop()
	g.Start()

	listed := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			listed[aws.ToString(o.Key)] = true
		}
	}
	readable := func(k string) (string, bool) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(k)})
		if err != nil {
			return "", false
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatalf("read %s after restart: %v", k, err)
		}
		return string(b), true
	}
	for k := range listed {
		if _, ok := readable(k); !ok {
			t.Errorf("listed but missing: %s", k)
		}
	}
	// A write in flight at the kill may or may not have landed; only keys
	// whose last operation was acknowledged with nothing after it are exact.
	// Every acknowledged object must exist (possibly overwritten by a later
	// unacknowledged PUT of the same key, which starts with the key too).
	n := 0
	for k, want := range acked {
		if want == "" || uncertain[k] {
			// An acknowledged delete, or a key with an operation in flight
			// at the kill (a PUT or DELETE that may have landed).
			continue
		}
		got, ok := readable(k)
		n++
		if !ok {
			t.Errorf("acknowledged PUT lost: %s", k)
		} else if !strings.HasPrefix(got, k+"#") {
			t.Errorf("%s: corrupt content %.40q", k, got)
		}
		if !listed[k] {
			t.Errorf("stored but unlisted: %s", k)
		}
	}
	if n == 0 {
		t.Fatal("no PUT was acknowledged before the kill: the test proved nothing")
	}
	out, err := g.Admin("bucket", "stats", "--bucket", "crash-bucket")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		NumObjects uint64 `json:"num_objects"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.NumObjects != uint64(len(listed)) {
		t.Fatalf("stats say %d objects, listing has %d", st.NumObjects, len(listed))
	}
	ev := checkVisibleHaveEvents(t, c, rv, "crash-bucket", false)
	t.Logf("%d acknowledged objects checked after kill -9, %d listed, %d with their events", n, len(listed), ev)
}

func TestAdminCLI(t *testing.T) {
	g := StartGateway(t)
	out, err := g.Admin("user", "create", "--uid", "bob", "--display-name", "Bob B", "--access-key", "BOBKEY", "--secret", "bobsecret123")
	if err != nil {
		t.Fatal(err)
	}
	var u struct {
		UserID      string `json:"user_id"`
		DisplayName string `json:"display_name"`
		Keys        []struct {
			User, AccessKey, SecretKey string
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(out), &u); err != nil {
		t.Fatal(err)
	}
	if u.UserID != "bob" || u.DisplayName != "Bob B" || len(u.Keys) != 1 || jsonField(t, out, "access_key") != "BOBKEY" ||
		jsonField(t, out, "secret_key") != "bobsecret123" || jsonField(t, out, "user") != "bob" {
		t.Fatalf("user create output: %s", out)
	}
	if _, err := g.Admin("user", "create", "--uid", "bob"); err == nil {
		t.Fatal("duplicate user accepted")
	}
	if out, err := g.Admin("user", "list"); err != nil || !strings.Contains(out, `"bob"`) || !strings.Contains(out, `"admin"`) {
		t.Fatalf("user list: %v %s", err, out)
	}
	bob := sdkClient(g, "BOBKEY", "bobsecret123")
	if _, err := bob.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("bobs")}); err != nil {
		t.Fatal(err)
	}
	bob.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bobs"), Key: aws.String("x"), Body: strings.NewReader("12345")})
	out, err = g.Admin("bucket", "stats", "--bucket", "bobs")
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	json.Unmarshal([]byte(out), &st)
	if st["owner"] != "bob" || st["num_shards"] != float64(11) || st["num_objects"] != float64(1) || st["size"] != float64(5) || st["id"] == "" {
		t.Fatalf("bucket stats: %s", out)
	}
	if _, err := g.Admin("bucket", "stats", "--bucket", "nope"); err == nil {
		t.Fatal("stats of a missing bucket succeeded")
	}
	// Pre-sharding through the admin API, with bad input rejected.
	out, err = g.Admin("bucket", "create", "--bucket", "presharded", "--uid", "bob", "--num-shards", "5")
	if err != nil || jsonField(t, out, "owner") != "bob" || !strings.Contains(out, `"num_shards": 5`) {
		t.Fatalf("bucket create: %v %s", err, out)
	}
	for _, bad := range [][]string{
		{"bucket", "create", "--bucket", "zero-shards", "--uid", "bob", "--num-shards", "0"},
		{"bucket", "create", "--bucket", "absurd-shards", "--uid", "bob", "--num-shards", "10000000"},
		{"bucket", "create", "--bucket", "no-owner", "--uid", "nobody"},
		{"bucket", "create", "--bucket", "presharded", "--uid", "bob"},
	} {
		if out, err := g.Admin(bad...); err == nil {
			t.Errorf("%v accepted: %s", bad, out)
		}
	}
	// Non-admins may not use the admin API.
	if _, _, err := bobAdmin(g); err == nil {
		t.Fatal("non-admin used the admin API")
	}
}

func bobAdmin(g *Gateway) (string, string, error) {
	saved := *g
	saved.AccessKey, saved.SecretKey = "BOBKEY", "bobsecret123"
	out, err := saved.Admin("user", "list")
	return out, "", err
}

// TestGracefulShutdownFinishesInFlight starts a slow upload, sends SIGTERM
// in the middle, and expects the upload to succeed and the data to be there
// after a restart.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("drain")}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("z"), 1<<20)
	ps, err := s3.NewPresignClient(c).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("drain"), Key: aws.String("slow")})
	if err != nil {
		t.Fatal(err)
	}
	// Presigned (UNSIGNED-PAYLOAD) so the client streams at once: ~0.8 s of body.
	slow := &slowReader{r: bytes.NewReader(data), delay: 50 * time.Millisecond, chunk: 64 << 10}
	req, _ := http.NewRequest(http.MethodPut, ps.URL, slow)
	req.ContentLength = int64(len(data))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	g.Stop() // SIGTERM and wait for exit
	if err := <-done; err != nil {
		t.Fatalf("in-flight PUT failed during graceful shutdown: %v", err)
	}
	g.Start()
	out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("drain"), Key: aws.String("slow")})
	if err != nil || aws.ToInt64(out.ContentLength) != int64(len(data)) {
		t.Fatalf("after restart: %v %+v", err, out)
	}
}

type slowReader struct {
	r     *bytes.Reader
	delay time.Duration
	chunk int
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.delay)
	if len(p) > s.chunk {
		p = p[:s.chunk]
	}
	return s.r.Read(p)
}

func (s *slowReader) Seek(off int64, whence int) (int64, error) { return s.r.Seek(off, whence) }
