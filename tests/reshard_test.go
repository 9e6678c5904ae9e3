package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestReshardThroughGateway drives resharding end to end on a real `cairn
// serve`: a bucket grows past max-objs-per-shard under a PUT load and is
// resharded dynamically while writers and listers keep going (every listing
// is ordered, duplicate-free and holds every key acknowledged before it
// started); then an admin reshard shrinks it; stats stay exact; bad admin
// input gets an error.
func TestReshardThroughGateway(t *testing.T) {
	g := StartGateway(t, "--bucket-index-shards", "3", "--max-objs-per-shard", "25", "--reshard-interval", "200ms")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	bucket := aws.String("reshard-bkt")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	stats := func() map[string]any {
		t.Helper()
		out, err := g.Admin("bucket", "stats", "--bucket", "reshard-bkt")
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("bucket stats: %v: %s", err, out)
		}
		return st
	}
	listAll := func() ([]string, error) {
		var keys []string
		var token *string
		for {
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bucket, MaxKeys: aws.Int32(97), ContinuationToken: token})
			if err != nil {
				return nil, err
			}
			for _, o := range out.Contents {
				keys = append(keys, *o.Key)
			}
			if !aws.ToBool(out.IsTruncated) {
				return keys, nil
			}
			token = out.NextContinuationToken
		}
	}

	const writers, perWriter = 8, 250 // 2000 objects: several dynamic reshards at 25 per shard
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				key := fmt.Sprintf("obj-%03d-%02d", i, w)
				if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
					errs <- fmt.Errorf("put %s: %w", key, err)
					return
				}
				mu.Lock()
				acked[key] = true
				mu.Unlock()
			}
		}(w)
	}
	done := make(chan struct{})
	listings := 0
	var lwg sync.WaitGroup
	lwg.Add(1)
	go func() {
		defer lwg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			mu.Lock()
			before := make([]string, 0, len(acked))
			for k := range acked {
				before = append(before, k)
			}
			mu.Unlock()
			keys, err := listAll()
			if err != nil {
				errs <- fmt.Errorf("list: %w", err)
				return
			}
			listings++
			seen := map[string]bool{}
			for i, k := range keys {
				if i > 0 && keys[i-1] >= k {
					errs <- fmt.Errorf("listing out of order or duplicated: %q then %q", keys[i-1], k)
					return
				}
				seen[k] = true
			}
			for _, k := range before {
				if !seen[k] {
					errs <- fmt.Errorf("acknowledged key %s missing from a listing of %d keys", k, len(keys))
					return
				}
			}
		}
	}()
	wg.Wait()
	t.Logf("index shards when the load ended: %v", stats()["num_shards"])

	// The dynamic trigger runs every 200 ms; wait for it to have grown the
	// index while the lister keeps checking.
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := stats()
		if n, _ := st["num_shards"].(float64); n > 3 {
			t.Logf("dynamic reshard: %v shards", n)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dynamic reshard within 60 s: %v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(done)
	lwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if listings == 0 {
		t.Fatal("no listing completed during the load")
	}
	t.Logf("%d full listings checked during the load", listings)

	// An admin reshard runs now (to 101 shards: under 25 objects a shard, so
	// the dynamic trigger leaves the result alone; 103 when the dynamic
	// reshard already chose 101); it is refused while a dynamic one still
	// runs, so retry.
	target := 101
	var out string
	var err error
	for i := 0; ; i++ {
		if n, _ := stats()["num_shards"].(float64); n == 101 {
			target = 103
		}
		out, err = g.Admin("bucket", "reshard", "--bucket", "reshard-bkt", "--num-shards", strconv.Itoa(target))
		if err == nil || i == 50 {
			break
		}
		time.Sleep(200 * time.Millisecond) // a dynamic reshard may still be finishing
	}
	var res struct {
		To     int `json:"to_shards"`
		Copied int `json:"entries_copied"`
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.To != target || res.Copied != writers*perWriter {
		t.Fatalf("bucket reshard: %v %s", err, out)
	}
	st := stats()
	want := writers * perWriter
	if st["num_shards"] != float64(target) || st["num_objects"] != float64(want) {
		t.Fatalf("after admin reshard: %v", st)
	}
	var size float64
	for k := range acked {
		size += float64(len(k))
	}
	if st["size"] != size {
		t.Fatalf("size %v, want %v", st["size"], size)
	}
	keys, err := listAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != want || !sort.StringsAreSorted(keys) {
		t.Fatalf("final listing: %d keys (sorted %v), want %d", len(keys), sort.StringsAreSorted(keys), want)
	}
	// Nothing is running or queued now: status says so with NoSuchReshard.
	if out, err := g.Admin("reshard", "status", "--bucket", "reshard-bkt"); err == nil || !strings.Contains(err.Error()+out, "NoSuchReshard") {
		t.Fatalf("reshard status of an idle bucket: %v %s", err, out)
	}
	if out, err := g.Admin("reshard", "list"); err != nil || !strings.HasPrefix(strings.TrimSpace(out), "[") && !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Fatalf("reshard list: %v %s", err, out)
	}
	for _, bad := range [][]string{
		{"bucket", "reshard", "--bucket", "no-such-bucket", "--num-shards", "7"},
		{"bucket", "reshard", "--bucket", "reshard-bkt", "--num-shards", "0"},
		{"bucket", "reshard", "--bucket", "reshard-bkt", "--num-shards", "10000000"},
		{"bucket", "reshard", "--bucket", "reshard-bkt", "--num-shards", "seven"},
		{"reshard", "status", "--bucket", "no-such-bucket"},
		{"reshard", "cancel", "--bucket", "no-such-bucket"},
	} {
		if out, err := g.Admin(bad...); err == nil {
			t.Errorf("%v accepted: %s", bad, out)
		}
	}
	if st := stats(); st["num_shards"] != float64(target) || st["num_objects"] != float64(want) {
		t.Fatalf("bad input changed the bucket: %v", st)
	}
}
