package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// lcStatus is `cairn admin lc status`.
type lcStatus struct {
	State     string    `json:"status"`
	Completed time.Time `json:"completed"`
	Examined  int64     `json:"examined"`
	Expired   int64     `json:"expired"`
	Locked    int64     `json:"locked"`
}

func lcStatusOf(t *testing.T, g *Gateway, bucket string) lcStatus {
	t.Helper()
	out, err := g.Admin("lc", "status", "--bucket", bucket)
	if err != nil {
		t.Fatal(err)
	}
	var st lcStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("lc status %q: %v", out, err)
	}
	return st
}

// waitPasses waits until n more passes over bucket completed.
func waitPasses(t *testing.T, g *Gateway, bucket string, n int) {
	t.Helper()
	last := lcStatusOf(t, g, bucket).Completed
	deadline := time.Now().Add(2 * time.Minute)
	for n > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("bucket %s: lifecycle passes did not complete", bucket)
		}
		st := lcStatusOf(t, g, bucket)
		if st.State == "COMPLETE" && st.Completed.After(last) {
			last = st.Completed
			n--
			continue
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// versionsOf lists every version and marker as "key:V" / "key:DM", newest
// first within a key.
func versionsOf(t *testing.T, c *s3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range out.Versions {
		got = append(got, aws.ToString(v.Key)+":V")
	}
	for _, m := range out.DeleteMarkers {
		got = append(got, aws.ToString(m.Key)+":DM")
	}
	sort.Strings(got)
	return got
}

// lifecycleTopic creates a persistent topic pushing to rv and subscribes
// bucket's lifecycle and tagging events to it.
func lifecycleTopic(t *testing.T, g *Gateway, rv *receiver, buckets ...string) {
	out := awsCLI(t, g, "sns", "create-topic", "--name=lctopic",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	arn := jsonField(t, out, "TopicArn")
	for _, b := range buckets {
		awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", b,
			`--notification-configuration={"TopicConfigurations": [{"Id": "lc", "TopicArn": "`+arn+`", "Events": ["s3:ObjectLifecycle:*", "s3:ObjectTagging:*"]}]}`)
	}
}

func eventCounts(rv *receiver) map[string]int {
	n := map[string]int{}
	for _, r := range rv.snapshot() {
		key, _ := field(r, "s3", "object", "key").(string)
		vid, _ := field(r, "s3", "object", "versionId").(string)
		n[fmt.Sprintf("%s %s %s", r["eventName"], key, vid)]++
	}
	return n
}

// TestLifecycleEndToEnd runs real passes with a 2 s lifecycle day and
// checks which versions remain and which events reached a real HTTP
// endpoint: each expired version exactly once, nothing for versions that
// no rule matches or that object lock keeps.
func TestLifecycleEndToEnd(t *testing.T) {
	rv := newReceiver(t)
	g := StartGateway(t, "--lc-debug-interval", "2s", "--notif-scan-interval", "1s", "--lc-max-objs", "4")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "lcb")
	awsCLI(t, g, "s3api", "put-bucket-versioning", "--bucket", "lcb", "--versioning-configuration", "Status=Enabled")
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "lcl", "--object-lock-enabled-for-bucket")
	lifecycleTopic(t, g, rv, "lcb", "lcl")

	for i := 0; i < 3; i++ {
		sdkPut(t, c, "lcb", "logs/a", fmt.Sprint("v", i))
	}
	sdkPut(t, c, "lcb", "keep/a", "kept")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lcb"), Key: aws.String("tagged/x"),
		Body: strings.NewReader("x"), Tagging: aws.String("exp=yes")}); err != nil {
		t.Fatal(err)
	}
	sdkPut(t, c, "lcb", "tagged/y", "y")
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("lcb"), Key: aws.String("mp/u")})
	if err != nil {
		t.Fatal(err)
	}
	// Tagging events on the way.
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("lcb"), Key: aws.String("keep/a"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("t"), Value: aws.String("1")}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: aws.String("lcb"), Key: aws.String("keep/a")}); err != nil {
		t.Fatal(err)
	}
	// Object lock: a held noncurrent version stays.
	held, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lcl"), Key: aws.String("locked/a"),
		Body: strings.NewReader("held"), ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn})
	if err != nil {
		t.Fatal(err)
	}
	free := sdkPut(t, c, "lcl", "locked/a", "free")
	sdkPut(t, c, "lcl", "locked/a", "current")

	awsCLI(t, g, "s3api", "put-bucket-lifecycle-configuration", "--bucket", "lcb", "--lifecycle-configuration", `{"Rules": [
		{"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 1}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
		{"ID": "tags", "Status": "Enabled", "Filter": {"And": {"Prefix": "tagged/", "Tags": [{"Key": "exp", "Value": "yes"}]}}, "Expiration": {"Days": 1}},
		{"ID": "mp", "Status": "Enabled", "Filter": {"Prefix": "mp/"}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]}`)
	awsCLI(t, g, "s3api", "put-bucket-lifecycle-configuration", "--bucket", "lcl", "--lifecycle-configuration",
		`{"Rules": [{"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": ""}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]}`)
	if out, err := g.Admin("lc", "list"); err != nil || !strings.Contains(out, `"lcb"`) || !strings.Contains(out, `"lcl"`) {
		t.Fatalf("lc list: %s %v", out, err)
	}

	// Day 1 expires logs/a's current version into a marker and its two
	// noncurrent versions; day 2 its last version; day 3 the lone marker.
	want := []string{"keep/a:V", "tagged/x:DM", "tagged/x:V", "tagged/y:V"}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := versionsOf(t, c, "lcb")
		if strings.Join(got, " ") == strings.Join(want, " ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versions of lcb: %v, want %v", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Two more passes (one forced by an operator): nothing more may happen.
	if out, err := g.Admin("lc", "process", "--bucket", "lcb"); err != nil {
		t.Fatalf("lc process: %s %v", out, err)
	}
	waitPasses(t, g, "lcb", 2)
	waitPasses(t, g, "lcl", 2)
	if got := versionsOf(t, c, "lcb"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("versions of lcb changed after the rules were done: %v", got)
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("lcb")})
	if err != nil || len(ups.Uploads) != 0 {
		t.Fatalf("upload %s not aborted: %v %v", aws.ToString(up.UploadId), ups, err)
	}
	if got := versionsOf(t, c, "lcl"); strings.Join(got, " ") != "locked/a:V locked/a:V" {
		t.Fatalf("versions of lcl: %v (the held one must stay, the free one go)", got)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lcl"), Key: aws.String("locked/a"), VersionId: held.VersionId}); err != nil {
		t.Fatalf("held version: %v", err)
	}
	if st := lcStatusOf(t, g, "lcl"); st.Locked < 1 {
		t.Fatalf("lc status of lcl counts no locked version: %+v", st)
	}

	// Events: each expiry exactly once, delivered to the endpoint.
	type ev struct {
		name, key string
		n         int
	}
	wantEv := []ev{
		{"ObjectLifecycle:Expiration:Current", "logs/a", 1},
		{"ObjectLifecycle:Expiration:NonCurrent", "logs/a", 3},
		{"ObjectLifecycle:Expiration:DeleteMarker", "logs/a", 1},
		{"ObjectLifecycle:Expiration:Current", "tagged/x", 1},
		{"ObjectLifecycle:Expiration:AbortMultipartUpload", "mp/u", 1},
		{"ObjectLifecycle:Expiration:NonCurrent", "locked/a", 1},
		{"ObjectTagging:Put", "keep/a", 1},
		{"ObjectTagging:Delete", "keep/a", 1},
	}
	total := 0
	for _, e := range wantEv {
		total += e.n
	}
	deadline = time.Now().Add(time.Minute)
	for len(rv.snapshot()) < total && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	waitPasses(t, g, "lcb", 1) // late duplicates would have arrived by now
	counts := map[string]int{}
	for k, n := range eventCounts(rv) {
		f := strings.Fields(k)
		if n != 1 && len(f) == 3 {
			t.Errorf("event %s delivered %d times", k, n)
		}
		counts[f[0]+" "+f[1]] += n
	}
	for _, e := range wantEv {
		if got := counts[e.name+" "+e.key]; got != e.n {
			t.Errorf("%s on %s: %d events, want %d", e.name, e.key, got, e.n)
		}
		delete(counts, e.name+" "+e.key)
	}
	for k, n := range counts {
		t.Errorf("unexpected events %s: %d", k, n)
	}
	for _, r := range rv.snapshot() {
		if r["eventName"] == "ObjectLifecycle:Expiration:NonCurrent" && field(r, "s3", "object", "key") == "locked/a" &&
			field(r, "s3", "object", "versionId") != aws.ToString(free.VersionId) {
			t.Errorf("lifecycle expired the wrong version of locked/a: %v", r)
		}
	}
}
