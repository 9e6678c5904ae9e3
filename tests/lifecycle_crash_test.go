package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLifecycleKillDashNine SIGKILLs the gateway in the middle of a paced
// lifecycle pass (after at least one checkpoint), restarts it on the same
// data directory and checks that the pass resumes and completes, that the
// objects the rule matches are gone and the others stay, and that the
// endpoint got exactly one expiration event per expired object: none
// lost, none twice; and every version still listed has its ObjectCreated
// event.
func TestLifecycleKillDashNine(t *testing.T) {
	rv := newReceiver(t)
	g := StartGateway(t, "--lc-debug-interval", "3s", "--lc-rate", "150", "--lc-max-objs", "2", "--notif-scan-interval", "1s", "--notif-lease", "3s")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	const bucket, nExp, nKeep = "lccrash", 900, 100
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", bucket)
	// Versioned: an expiry writes a delete marker, so a second expiry of
	// an object would show as a second marker.
	awsCLI(t, g, "s3api", "put-bucket-versioning", "--bucket", bucket, "--versioning-configuration", "Status=Enabled")
	// Lifecycle events, and ObjectCreated for the "visible without event"
	// check after the restart.
	out := awsCLI(t, g, "sns", "create-topic", "--name=lctopic",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", bucket,
		`--notification-configuration={"TopicConfigurations": [{"Id": "lc", "TopicArn": "`+jsonField(t, out, "TopicArn")+
			`", "Events": ["s3:ObjectLifecycle:*", "s3:ObjectCreated:*"]}]}`)
	stop := loadWorkers(8, func(w, i int) {
		n := w + 8*i
		if n >= nExp+nKeep {
			return
		}
		key := fmt.Sprintf("exp/%04d", n)
		if n >= nExp {
			key = fmt.Sprintf("keep/%04d", n)
		}
		for {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(key)})
			if err == nil {
				return
			}
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ls, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(1000)})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls.Contents) == nExp+nKeep {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d objects written", len(ls.Contents))
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	awsCLI(t, g, "s3api", "put-bucket-lifecycle-configuration", "--bucket", bucket, "--lifecycle-configuration",
		`{"Rules": [{"ID": "exp", "Status": "Enabled", "Filter": {"Prefix": "exp/"}, "Expiration": {"Date": "2020-01-01T00:00:00Z"}}]}`)

	// A past date: every exp/ object is due in the first pass, whenever it
	// starts. Kill once it has checkpointed some expiries and has more to do.
	deadline = time.Now().Add(2 * time.Minute)
	for {
		st := lcStatusOf(t, g, bucket)
		if st.State == "PROCESSING" && st.Expired >= 150 && st.Expired < nExp-150 {
			t.Logf("killing during the pass: %+v", st)
			break
		}
		if time.Now().After(deadline) || (st.State == "COMPLETE" && st.Expired > 0) {
			t.Fatalf("never caught a pass in progress: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.Kill()
	g.Start()

	deadline = time.Now().Add(3 * time.Minute)
	for {
		ls, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("exp/")})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls.Contents) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d exp/ objects left after the restart", len(ls.Contents))
		}
		time.Sleep(200 * time.Millisecond)
	}
	ls, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil || len(ls.Contents) != nKeep {
		t.Fatalf("keep/ objects: %d (%v)", len(ls.Contents), err)
	}
	markers, versions := map[string]int{}, map[string]int{}
	lv := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	for {
		out, err := c.ListObjectVersions(ctx, lv)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.DeleteMarkers {
			markers[aws.ToString(m.Key)]++
		}
		for _, v := range out.Versions {
			versions[aws.ToString(v.Key)]++
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		lv.KeyMarker, lv.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
	for i := 0; i < nExp+nKeep; i++ {
		key, wantM := fmt.Sprintf("exp/%04d", i), 1
		if i >= nExp {
			key, wantM = fmt.Sprintf("keep/%04d", i), 0
		}
		if markers[key] != wantM || versions[key] != 1 {
			t.Fatalf("%s: %d markers, %d versions (want %d, 1)", key, markers[key], versions[key], wantM)
		}
	}
	// Every version still listed has its ObjectCreated event.
	checkVisibleHaveEvents(t, c, rv, bucket, true)
	expirations := func() int {
		n := 0
		for _, r := range rv.snapshot() {
			if r["eventName"] == "ObjectLifecycle:Expiration:Current" {
				n++
			}
		}
		return n
	}
	deadline = time.Now().Add(time.Minute)
	for expirations() < nExp && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	waitPasses(t, g, bucket, 1)
	// A redelivery (delivery is at least once) and an event emitted again
	// because the kill fell between its commit and the removal carry the
	// same x-amz-request-id (derived from the version); a second expiry of
	// an object would carry another.
	per := map[string]map[string]bool{}
	raw := 0
	for _, r := range rv.snapshot() {
		if name, _ := r["eventName"].(string); strings.HasPrefix(name, "ObjectCreated:") {
			continue
		}
		if r["eventName"] != "ObjectLifecycle:Expiration:Current" {
			t.Errorf("unexpected event %v", r["eventName"])
			continue
		}
		key := field(r, "s3", "object", "key").(string)
		rid, _ := field(r, "responseElements", "x-amz-request-id").(string)
		if per[key] == nil {
			per[key] = map[string]bool{}
		}
		per[key][rid] = true
		raw++
	}
	lost, twice := 0, 0
	for i := 0; i < nExp; i++ {
		switch n := len(per[fmt.Sprintf("exp/%04d", i)]); {
		case n == 0:
			lost++
		case n > 1:
			twice++
		}
	}
	t.Logf("%d records for %d expired objects (repeats with the same request id: %d)", raw, len(per), raw-len(per))
	if lost > 0 || twice > 0 || len(per) != nExp {
		t.Fatalf("events after kill -9: %d lost, %d delivered twice, %d keys (want %d)", lost, twice, len(per), nExp)
	}
}
