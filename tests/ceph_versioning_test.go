//go:build rados

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Three gateways over one Ceph cluster write versions and delete markers of
// the same few keys at once. The index class runs as an optimistic
// transaction on RADOS; afterwards every acknowledged version is listed
// exactly once with its own bytes, ids are unique, and the stats agree.
func TestCephGatewaysVersions(t *testing.T) {
	conf, _ := cephCluster(t)
	gws := startRadosGateways(t, conf, 3, "--bucket-index-shards", "3")
	clients := make([]*s3.Client, len(gws))
	for i, g := range gws {
		clients[i] = sdkClient(g, g.AccessKey, g.SecretKey)
	}
	ctx := context.Background()
	const bucket = "cephvers"
	if _, err := clients[0].CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	// Gateways 1 and 2 load the bucket only after this: no stale instance.
	if _, err := clients[0].PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]map[string]string{} // key → version id → body ("" = marker)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := clients[w%3]
			for i := 0; i < 40; i++ {
				key := fmt.Sprintf("k%d", i%4)
				var vid, body string
				if i%5 == 4 {
					out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
					if err != nil {
						errs <- err
						return
					}
					vid = aws.ToString(out.VersionId)
				} else {
					body = fmt.Sprintf("%s#%d.%d", key, w, i)
					out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
					if err != nil {
						errs <- err
						return
					}
					vid = aws.ToString(out.VersionId)
				}
				mu.Lock()
				if acked[key] == nil {
					acked[key] = map[string]string{}
				}
				if _, dup := acked[key][vid]; dup {
					mu.Unlock()
					errs <- fmt.Errorf("version id %s of %s given twice", vid, key)
					return
				}
				acked[key][vid] = body
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	listed, err := listVersionsRaw(ctx, clients[1], bucket, 17)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range acked {
		total += len(m)
	}
	if len(listed) != total {
		t.Fatalf("%d versions listed, %d acknowledged", len(listed), total)
	}
	for _, v := range listed {
		body, ok := acked[v.key][v.id]
		if !ok || (body == "") != v.marker {
			t.Fatalf("listed %+v not acknowledged as such", v)
		}
		if v.marker {
			continue
		}
		out, err := clients[2].GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(v.key), VersionId: aws.String(v.id)})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != body {
			t.Fatalf("%s %s holds %q, want %q", v.key, v.id, b, body)
		}
	}
	out, err := gws[0].Admin("bucket", "stats", "--bucket", bucket)
	var st struct {
		NumVersions int `json:"num_versions"`
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.NumVersions != total {
		t.Fatalf("stats %s %v, want %d versions", out, err, total)
	}
}
