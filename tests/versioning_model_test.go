package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// vmodel is what a worker knows of its keys: each key's versions, newest
// first, as acknowledged to the client.
type vver struct {
	id     string
	marker bool
	body   string
}

type listedV struct {
	key, id string
	marker  bool
	latest  bool
}

// listVersionsRaw pages through ListObjectVersions (page size n) and
// returns the versions and markers merged back into S3's order (the SDK
// splits them; ids sort newest first within a key, and every write here
// is under Enabled versioning, so no "null" needs placing).
func listVersionsRaw(ctx context.Context, c *s3.Client, bucket string, n int32) ([]listedV, error) {
	var out []listedV
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(n)}
	for {
		res, err := c.ListObjectVersions(ctx, in)
		if err != nil {
			return nil, err
		}
		var page []listedV
		for _, v := range res.Versions {
			page = append(page, listedV{aws.ToString(v.Key), aws.ToString(v.VersionId), false, aws.ToBool(v.IsLatest)})
		}
		for _, m := range res.DeleteMarkers {
			page = append(page, listedV{aws.ToString(m.Key), aws.ToString(m.VersionId), true, aws.ToBool(m.IsLatest)})
		}
		sort.Slice(page, func(i, j int) bool {
			if page[i].key != page[j].key {
				return page[i].key < page[j].key
			}
			return page[i].id < page[j].id
		})
		out = append(out, page...)
		if !aws.ToBool(res.IsTruncated) {
			return out, nil
		}
		in.KeyMarker, in.VersionIdMarker = res.NextKeyMarker, res.NextVersionIdMarker
	}
}

// Writers, deleters (markers) and version deleters work on their own keys
// and keep a model of them; listers check every listing for order and
// uniqueness while admin reshards move the index between shard counts.
// When all is quiet, the listings, the current objects, every version's
// bytes and the bucket stats must match the model exactly.
func TestVersioningModelUnderReshards(t *testing.T) {
	g := StartGateway(t, "--bucket-index-shards", "3", "--dynamic-resharding=false")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	const bucket = "vmodel"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	const workers, keysPerWorker, opsPerWorker = 4, 6, 120
	models := make([]map[string][]vver, workers)
	errs := make(chan error, 16)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		models[w] = map[string][]vver{}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			m := models[w]
			for i := 0; i < opsPerWorker; i++ {
				key := fmt.Sprintf("k%d/%02d", rng.Intn(keysPerWorker), w)
				switch r := rng.Intn(10); {
				case r < 5:
					body := fmt.Sprintf("%s#%d", key, i)
					out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
					if err != nil {
						fail(fmt.Errorf("put %s: %w", key, err))
						return
					}
					m[key] = append([]vver{{id: aws.ToString(out.VersionId), body: body}}, m[key]...)
				case r < 7:
					out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
					if err != nil || !aws.ToBool(out.DeleteMarker) {
						fail(fmt.Errorf("delete %s: %v %v", key, out, err))
						return
					}
					m[key] = append([]vver{{id: aws.ToString(out.VersionId), marker: true}}, m[key]...)
				case len(m[key]) > 0:
					j := rng.Intn(len(m[key]))
					if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(m[key][j].id)}); err != nil {
						fail(fmt.Errorf("delete %s version %s: %w", key, m[key][j].id, err))
						return
					}
					m[key] = append(m[key][:j:j], m[key][j+1:]...)
				}
			}
		}(w)
	}
	done := make(chan struct{})
	var bg sync.WaitGroup
	listings := 0
	bg.Add(2)
	go func() { // lister
		defer bg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			vs, err := listVersionsRaw(ctx, c, bucket, 7)
			if err != nil {
				fail(fmt.Errorf("list versions: %w", err))
				return
			}
			seen := map[string]bool{}
			for i, v := range vs {
				if seen[v.key+" "+v.id] {
					fail(fmt.Errorf("version %s %s listed twice", v.key, v.id))
					return
				}
				seen[v.key+" "+v.id] = true
				if i > 0 && vs[i-1].key > v.key {
					fail(fmt.Errorf("listing out of order: %q then %q", vs[i-1].key, v.key))
					return
				}
			}
			listings++
		}
	}()
	reshards := 0
	go func() { // reshards in between
		defer bg.Done()
		for _, n := range []string{"5", "2", "7", "3"} {
			select {
			case <-done:
				return
			default:
			}
			if out, err := g.Admin("bucket", "reshard", "--bucket", bucket, "--num-shards", n); err != nil {
				fail(fmt.Errorf("reshard to %s: %v %s", n, err, out))
				return
			}
			reshards++
		}
	}()
	wg.Wait()
	close(done)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d listings and %d reshards during the load", listings, reshards)
	if reshards == 0 {
		t.Fatal("no reshard ran during the load")
	}

	// Quiet: everything must match the model.
	var want []listedV
	var current []string
	var versions, objects, size int
	for _, m := range models {
		for key, vs := range m {
			for i, v := range vs {
				want = append(want, listedV{key, v.id, v.marker, i == 0})
				versions++
				size += len(v.body)
			}
			if len(vs) > 0 && !vs[0].marker {
				current = append(current, key)
				objects++
			}
		}
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].key != want[j].key {
			return want[i].key < want[j].key
		}
		return want[i].id < want[j].id
	})
	sort.Strings(current)
	for _, page := range []int32{1000, 3} {
		got, err := listVersionsRaw(ctx, c, bucket, page)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("versions (page %d):\n got  %v\n want %v", page, got, want)
		}
	}
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var gotCur []string
	for _, o := range lo.Contents {
		gotCur = append(gotCur, aws.ToString(o.Key))
	}
	if fmt.Sprint(gotCur) != fmt.Sprint(current) {
		t.Fatalf("current objects %v, want %v", gotCur, current)
	}
	for _, m := range models {
		for key, vs := range m {
			for _, v := range vs {
				if v.marker {
					continue
				}
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(v.id)})
				if err != nil {
					t.Fatalf("get %s %s: %v", key, v.id, err)
				}
				b, _ := io.ReadAll(out.Body)
				out.Body.Close()
				if string(b) != v.body {
					t.Fatalf("%s %s holds %q, want %q", key, v.id, b, v.body)
				}
			}
		}
	}
	out, err := g.Admin("bucket", "stats", "--bucket", bucket)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		NumObjects   int `json:"num_objects"`
		NumVersions  int `json:"num_versions"`
		VersionsSize int `json:"versions_size"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.NumObjects != objects || st.NumVersions != versions || st.VersionsSize != size {
		t.Fatalf("stats %s (%v), want %d objects, %d versions, %d bytes", out, err, objects, versions, size)
	}
}
