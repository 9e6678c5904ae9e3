package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestAdminReshard drives /admin/reshard of a running gateway through
// `cairn admin`: bad input, a reshard, status and cancel with nothing to do.
func TestAdminReshard(t *testing.T) {
	g := StartGateway(t, "--bucket-index-shards", "2")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("rsadmin")}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		key := fmt.Sprintf("k%02d", i)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rsadmin"), Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range [][]string{
		{"bucket", "reshard", "--bucket", "rsadmin", "--num-shards", "many"},
		{"bucket", "reshard", "--bucket", "rsadmin", "--num-shards", "0"},
		{"bucket", "reshard", "--bucket", "nosuchbucket", "--num-shards", "5"},
	} {
		if out, err := g.Admin(bad...); err == nil {
			t.Fatalf("%v accepted: %s", bad, out)
		}
	}
	out, err := g.Admin("bucket", "reshard", "--bucket", "rsadmin", "--num-shards", "5")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		From int `json:"from_shards"`
		To   int `json:"to_shards"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.From != 2 || res.To != 5 {
		t.Fatalf("reshard result %s (%v)", out, err)
	}
	stats, err := g.Admin("bucket", "stats", "--bucket", "rsadmin")
	if err != nil || !strings.Contains(stats, `"num_shards": 5`) || !strings.Contains(stats, `"num_objects": 50`) ||
		!strings.Contains(stats, `"index_view": true`) {
		t.Fatalf("stats after reshard: %v %s", err, stats)
	}
	// The listing (from the bucket's ordered view, which the new shards
	// joined at the switch) sees writes made after the reshard.
	for _, key := range []string{"k00a", "k50"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rsadmin"), Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("rsadmin"), Key: aws.String("k01")}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("rsadmin"), MaxKeys: aws.Int32(7)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	if len(keys) != 51 || keys[0] != "k00" || keys[1] != "k00a" || keys[2] != "k02" || keys[50] != "k50" {
		t.Fatalf("listing after the reshard: %d keys %v", len(keys), keys)
	}
	check, err := g.Admin("bucket", "check", "--bucket", "rsadmin")
	if err != nil || !strings.Contains(check, `"consistent": true`) || !strings.Contains(check, `"index_view": true`) || !strings.Contains(check, `"view_mismatches": []`) {
		t.Fatalf("bucket check: %v %s", err, check)
	}
	if out, err := g.Admin("bucket", "check", "--bucket", "nosuchbucket"); err == nil {
		t.Fatalf("check of a missing bucket accepted: %s", out)
	}
	t.Logf("bucket stats after the reshard: %s", strings.Join(strings.Fields(stats), " "))
	if out, err := g.Admin("reshard", "list"); err != nil {
		t.Fatalf("reshard list: %v %s", err, out)
	}
	if out, err := g.Admin("reshard", "cancel", "--bucket", "nosuchbucket"); err == nil {
		t.Fatalf("cancel of a missing bucket accepted: %s", out)
	}
}

// TestAdminBucketListObjects: `cairn admin bucket list --bucket B` prints
// every index entry (every version, delete markers as exists=false) in key
// order, paging through the gateway past its 1,000-entry page, and stops at
// --max-entries, as radosgw-admin's command does.
func TestAdminBucketListObjects(t *testing.T) {
	g := StartGateway(t, "--bucket-index-shards", "3")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	const bucket, n = "adminlist", 1003
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		go func() {
			var err error
			for i := w; i < n && err == nil; i += 8 {
				key := fmt.Sprintf("k%04d", i)
				_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(key)})
			}
			errs <- err
		}()
	}
	for w := 0; w < 8; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// k0001 gets a second version, k0002 a delete marker.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k0001"), Body: strings.NewReader("v2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k0002")}); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name     string `json:"name"`
		Instance string `json:"instance"`
		Exists   bool   `json:"exists"`
		Latest   bool   `json:"is_latest"`
		Meta     struct {
			Size         int64  `json:"size"`
			StorageClass string `json:"storage_class"`
		} `json:"meta"`
	}
	list := func(args ...string) []entry {
		t.Helper()
		out, err := g.Admin(append([]string{"bucket", "list", "--bucket", bucket}, args...)...)
		if err != nil {
			t.Fatalf("bucket list %v: %v %s", args, err, out)
		}
		var es []entry
		if err := json.Unmarshal([]byte(out), &es); err != nil {
			t.Fatalf("bucket list %v: %v in %.300s", args, err, out)
		}
		return es
	}
	es := list()
	if len(es) != n+2 {
		t.Fatalf("%d entries, want %d (every version and the delete marker)", len(es), n+2)
	}
	var k1, k2 []entry
	for i, e := range es {
		if i > 0 && es[i-1].Name > e.Name {
			t.Fatalf("entries out of order: %q before %q", es[i-1].Name, e.Name)
		}
		if e.Instance == "" || e.Meta.StorageClass != "STANDARD" {
			t.Fatalf("entry %+v: want a version id and STANDARD", e)
		}
		switch e.Name {
		case "k0001":
			k1 = append(k1, e)
		case "k0002":
			k2 = append(k2, e)
		}
	}
	if len(k1) != 2 || !k1[0].Latest || k1[0].Meta.Size != 2 || k1[1].Latest || k1[1].Meta.Size != 5 {
		t.Fatalf("k0001's versions %+v, want the 2-byte one latest first", k1)
	}
	if len(k2) != 2 || k2[0].Exists || !k2[0].Latest || !k2[1].Exists {
		t.Fatalf("k0002 %+v, want a latest delete marker (exists false) over the object", k2)
	}
	if es := list("--max-entries", "3"); len(es) != 3 || es[2].Name != "k0001" {
		t.Fatalf("--max-entries 3: %+v", es)
	}
	if out, err := g.Admin("bucket", "list", "--bucket", "nosuchbucket"); err == nil {
		t.Fatalf("a missing bucket listed: %s", out)
	}
	// A user without admin caps may not list through the admin API.
	if out, err := g.Admin("user", "create", "--uid", "plain", "--access-key", "PLAINKEY", "--secret", "plainsecret123"); err != nil {
		t.Fatalf("user create: %v %s", err, out)
	}
	cmd := exec.Command(cairnBin, "admin", "--endpoint", g.Endpoint, "--access-key-id", "PLAINKEY", "--secret-access-key", "plainsecret123",
		"bucket", "list", "--bucket", bucket)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "AccessDenied") {
		t.Fatalf("a plain user listed the bucket through the admin API: %v %s", err, out)
	}
}

// TestAdminBucketCheckFix: `bucket check --fix` builds the ordered index
// view of a bucket made without one (bucket-index-view=false), and the
// listing is the same before and after.
func TestAdminBucketCheckFix(t *testing.T) {
	g := StartGateway(t, "--bucket-index-view=false")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("nofix")}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("nofix"), Key: aws.String(fmt.Sprintf("k%02d", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() string {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("nofix"), MaxKeys: aws.Int32(1000)})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		return strings.Join(keys, ",")
	}
	before := list()
	// The bucket's owner is no admin: check and fix are refused, nothing changes.
	out, err := g.Admin("user", "create", "--uid", "plain", "--display-name", "plain")
	if err != nil {
		t.Fatal(err)
	}
	as := []string{"--access-key-id", jsonField(t, out, "access_key"), "--secret-access-key", jsonField(t, out, "secret_key")}
	for _, args := range [][]string{{"bucket", "check", "--bucket", "nofix"}, {"bucket", "check", "--bucket", "nofix", "--fix"}} {
		if out, err := g.Admin(append(args, as...)...); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Fatalf("non-admin %v: %v %s", args, err, out)
		}
	}
	check, err := g.Admin("bucket", "check", "--bucket", "nofix")
	if err != nil || !strings.Contains(check, `"index_view": false`) {
		t.Fatalf("check of a bucket without a view: %v %s", err, check)
	}
	fix, err := g.Admin("bucket", "check", "--bucket", "nofix", "--fix")
	if err != nil || !strings.Contains(fix, `"view_built": true`) || !strings.Contains(fix, `"consistent": true`) {
		t.Fatalf("check --fix: %v %s", err, fix)
	}
	if stats, err := g.Admin("bucket", "stats", "--bucket", "nofix"); err != nil || !strings.Contains(stats, `"index_view": true`) {
		t.Fatalf("stats after the fix: %v %s", err, stats)
	}
	if after := list(); after != before || strings.Count(after, ",") != 29 {
		t.Fatalf("listing changed: %s → %s", before, after)
	}
}
