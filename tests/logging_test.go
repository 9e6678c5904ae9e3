package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-s3/cairn/internal/accesslog"
)

// loggingPolicy lets the logging service write under prefix of target
// for source (RGW requires it even when one owner has both buckets).
func loggingPolicy(target, prefix, source string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Sid":"logging","Effect":"Allow",
"Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::%s/%s*",
"Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::%s"}}}]}`, target, prefix, source)
}

// readLogObjects returns the records of every log object under prefix,
// and the keys.
func readLogObjects(t *testing.T, c *s3.Client, bucket, prefix string) ([]string, []string) {
	t.Helper()
	ctx := context.Background()
	var recs, keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(out.Body)
			out.Body.Close()
			for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				if l != "" {
					recs = append(recs, l)
				}
			}
		}
	}
	return recs, keys
}

// TestBucketLoggingSDK: aws-sdk-go-v2 configures standard logging with a
// simple key format; the target checks answer as RGW does; requests of
// every kind (signed, anonymous, failing) are recorded with every field
// of AWS's format, delivered by `cairn admin bucket logging flush`.
func TestBucketLoggingSDK(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	alice := createUser(t, g, "alice")
	c := sdkClient(g, alice.ak, alice.sk)
	for _, b := range []string{"lg-src", "lg-logs"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(target, prefix string) error {
		_, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: aws.String("lg-src"),
			BucketLoggingStatus: &types.BucketLoggingStatus{LoggingEnabled: &types.LoggingEnabled{
				TargetBucket: aws.String(target), TargetPrefix: aws.String(prefix),
				TargetObjectKeyFormat: &types.TargetObjectKeyFormat{SimplePrefix: &types.SimplePrefix{}},
			}}})
		return err
	}
	wantCode(t, "missing target", put("lg-none", "x/"), "InvalidTargetBucketForLogging")
	wantCode(t, "target is source", put("lg-src", "x/"), "InvalidTargetBucketForLogging")
	wantCode(t, "target without policy", put("lg-logs", "src/"), "AccessDenied")
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("lg-logs"), Policy: aws.String(loggingPolicy("lg-logs", "src/", "lg-src"))}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "prefix outside the policy", put("lg-logs", "other/"), "AccessDenied")
	_, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: aws.String("lg-src"),
		BucketLoggingStatus: &types.BucketLoggingStatus{LoggingEnabled: &types.LoggingEnabled{
			TargetBucket: aws.String("lg-logs"), TargetPrefix: aws.String("src/"),
			TargetGrants: []types.TargetGrant{{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String("bob")}, Permission: types.BucketLogsPermissionRead}},
		}}})
	wantCode(t, "TargetGrants", err, "NotImplemented")
	bob := createUser(t, g, "bob")
	_, err = sdkClient(g, bob.ak, bob.sk).PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: aws.String("lg-src"),
		BucketLoggingStatus: &types.BucketLoggingStatus{}})
	wantCode(t, "not the owner", err, "AccessDenied")
	if err := put("lg-logs", "src/"); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: aws.String("lg-src")})
	if err != nil || got.LoggingEnabled == nil || aws.ToString(got.LoggingEnabled.TargetBucket) != "lg-logs" ||
		aws.ToString(got.LoggingEnabled.TargetPrefix) != "src/" || got.LoggingEnabled.TargetObjectKeyFormat == nil ||
		got.LoggingEnabled.TargetObjectKeyFormat.SimplePrefix == nil {
		t.Fatalf("GetBucketLogging: %+v %v", got, err)
	}

	before := time.Now().UTC().Add(-time.Second)
	pout, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lg-src"), Key: aws.String("dir/a b"), Body: strings.NewReader("four")})
	if err != nil {
		t.Fatal(err)
	}
	putID, _ := awsmiddleware.GetRequestIDMetadata(pout.ResultMetadata)
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lg-src"), Key: aws.String("dir/a b")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lg-src"), Key: aws.String("missing")})
	wantCode(t, "missing key", err, "NoSuchKey")
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lg-src")}); err != nil {
		t.Fatal(err)
	}
	anon, err := http.Get(g.Endpoint + "/lg-src/dir/a%20b")
	if err != nil {
		t.Fatal(err)
	}
	anon.Body.Close()
	if anon.StatusCode != 403 {
		t.Fatalf("anonymous GET: %d", anon.StatusCode)
	}

	out := g.mustAdmin(t, "bucket", "logging", "flush", "--bucket", "lg-src")
	var fl struct {
		Flushed []string `json:"flushed_objects"`
	}
	if err := json.Unmarshal([]byte(out), &fl); err != nil || len(fl.Flushed) != 1 {
		t.Fatalf("flush: %s %v", out, err)
	}
	recs, keys := readLogObjects(t, c, "lg-logs", "src/")
	if len(keys) != 1 || keys[0] != fl.Flushed[0] {
		t.Fatalf("log objects %v, flushed %v", keys, fl.Flushed)
	}
	if !regexp.MustCompile(`^src/\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-[0-9A-F]{16}$`).MatchString(keys[0]) {
		t.Fatalf("key %q is not [TargetPrefix]YYYY-mm-DD-HH-MM-SS-UniqueString", keys[0])
	}
	byOp := map[string][]string{}
	for _, r := range recs {
		f, err := accesslog.SplitFields(r)
		if err != nil || len(f) != accesslog.StandardFields {
			t.Fatalf("record %q: %d fields, %v", r, len(f), err)
		}
		byOp[f[6]+" "+f[7]+" "+f[9]] = f
	}
	check := func(name string, f []string, want map[int]string) {
		t.Helper()
		if f == nil {
			t.Fatalf("%s: no record; have %v", name, recs)
		}
		for i, w := range want {
			if f[i] != w {
				t.Errorf("%s: field %d = %q, want %q (record %q)", name, i, f[i], w, f)
			}
		}
		ts, err := time.Parse(accesslog.TimeLayout, f[2])
		if err != nil || ts.Before(before.Truncate(time.Second)) || ts.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: time %q: %v", name, f[2], err)
		}
		for _, i := range []int{13, 14} { // total and turn-around time, ms
			if _, err := strconv.Atoi(f[i]); err != nil {
				t.Errorf("%s: field %d = %q, want milliseconds", name, i, f[i])
			}
		}
		if f[5] == "" || f[5] == "-" || f[18] == "" || f[18] == "-" {
			t.Errorf("%s: request id %q / host id %q", name, f[5], f[18])
		}
		if !strings.Contains(f[16], "aws-sdk-go-v2") && f[4] != "-" {
			t.Errorf("%s: user agent %q", name, f[16])
		}
	}
	signed := map[int]string{0: "alice", 1: "lg-src", 3: "127.0.0.1", 4: "alice", 15: "-", 17: "-", 19: "SigV4",
		20: "-", 21: "AuthHeader", 22: g.Addr, 23: "-", 24: "-", 25: "-"}
	with := func(m map[int]string, kv ...any) map[int]string {
		out := map[int]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(int)] = kv[i+1].(string)
		}
		return out
	}
	f := byOp["REST.PUT.OBJECT dir/a%20b 200"]
	check("PUT", f, with(signed, 5, putID, 10, "-", 11, "-", 12, "4"))
	if f != nil && !strings.HasPrefix(f[8], "PUT /lg-src/dir/a%20b") || f != nil && !strings.HasSuffix(f[8], " HTTP/1.1") {
		t.Errorf("PUT request-URI %q", f[8])
	}
	check("GET", byOp["REST.GET.OBJECT dir/a%20b 200"], with(signed, 10, "-", 11, "4", 12, "4"))
	check("GET missing", byOp["REST.GET.OBJECT missing 404"], with(signed, 10, "NoSuchKey"))
	check("ListObjectsV2", byOp["REST.GET.BUCKET - 200"], with(signed, 10, "-"))
	check("anonymous", byOp["REST.GET.OBJECT dir/a%20b 403"], map[int]string{0: "alice", 1: "lg-src", 4: "-", 10: "AccessDenied", 19: "-", 21: "-", 22: g.Addr})

	// Disabling flushes too (RGW), and records stop.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lg-src"), Key: aws.String("last"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: aws.String("lg-src"), BucketLoggingStatus: &types.BucketLoggingStatus{}}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: aws.String("lg-src")})
	if err != nil || got.LoggingEnabled != nil {
		t.Fatalf("after disable: %+v %v", got, err)
	}
	recs, _ = readLogObjects(t, c, "lg-logs", "src/")
	if !strings.Contains(strings.Join(recs, "\n"), "REST.PUT.OBJECT last ") {
		t.Fatalf("the record before disabling was not delivered: %v", recs)
	}
}

// TestBucketLoggingShutdownFlush: standard records pending at SIGTERM
// are delivered by the shutdown, partitioned keys as AWS documents.
func TestBucketLoggingShutdownFlush(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	for _, b := range []string{"sd-src", "sd-logs"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("sd-logs"), Policy: aws.String(loggingPolicy("sd-logs", "", "sd-src"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: aws.String("sd-src"),
		BucketLoggingStatus: &types.BucketLoggingStatus{LoggingEnabled: &types.LoggingEnabled{
			TargetBucket: aws.String("sd-logs"), TargetPrefix: aws.String(""),
			TargetObjectKeyFormat: &types.TargetObjectKeyFormat{PartitionedPrefix: &types.PartitionedPrefix{PartitionDateSource: types.PartitionDateSourceEventTime}},
		}}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sd-src"), Key: aws.String(fmt.Sprint("k", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	g.Stop()
	g.Start()
	recs, keys := readLogObjects(t, c, "sd-logs", "")
	if len(recs) < 5 || len(keys) != 1 {
		t.Fatalf("after shutdown: %d records in %v", len(recs), keys)
	}
	// [SourceAccountId] (the owner; each user is its own account) / [SourceRegion] (the region option) /[SourceBucket]/[YYYY]/[MM]/[DD]/[YYYY]-[MM]-[DD]-[hh]-[mm]-[ss]-[UniqueString]
	re := regexp.MustCompile(`^admin/default/sd-src/(\d{4})/(\d{2})/(\d{2})/(\d{4})-(\d{2})-(\d{2})-\d{2}-\d{2}-\d{2}-[0-9A-F]{16}$`)
	m := re.FindStringSubmatch(keys[0])
	if m == nil || m[1] != m[4] || m[2] != m[5] || m[3] != m[6] {
		t.Fatalf("partitioned key %q", keys[0])
	}
}

// TestBucketLoggingJournalKill: journal mode under concurrent PUTs,
// DELETEs and DeleteObjects, the gateway killed with SIGKILL mid-load; after a restart and
// a flush every acknowledged write has its journal record. The source
// bucket also has a persistent notification: no event delivered (before
// or after the kill) reports a write the crash lost, and every object
// left has its event.
func TestBucketLoggingJournalKill(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	for _, b := range []string{"jr-src", "jr-logs"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	rv := newReceiver(t)
	topic := notifyBucket(t, g, rv, "jr-src")
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("jr-logs"), Policy: aws.String(loggingPolicy("jr-logs", "j/", "jr-src"))}); err != nil {
		t.Fatal(err)
	}
	// Journal mode and ObjectRollTime are RGW extensions the SDK cannot
	// send: raw XML, signed by the SDK's own client through a custom body.
	doc := `<BucketLoggingStatus xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LoggingEnabled>` +
		`<TargetBucket>jr-logs</TargetBucket><TargetPrefix>j/</TargetPrefix><ObjectRollTime>3600</ObjectRollTime>` +
		`<LoggingType>Journal</LoggingType></LoggingEnabled></BucketLoggingStatus>`
	if r := (principal{ak: g.AccessKey, sk: g.SecretKey}).do(t, g, "PUT", "/jr-src?logging", doc); r.status != 200 {
		t.Fatalf("PutBucketLogging journal: %d %s", r.status, r.body)
	}
	got, err := c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: aws.String("jr-src")})
	if err != nil || got.LoggingEnabled == nil {
		t.Fatalf("GetBucketLogging: %+v %v", got, err)
	}
	if r := (principal{ak: g.AccessKey, sk: g.SecretKey}).do(t, g, "GET", "/jr-src?logging", ""); !strings.Contains(r.body, "<LoggingType>Journal</LoggingType>") || !strings.Contains(r.body, "<ObjectRollTime>3600</ObjectRollTime>") {
		t.Fatalf("GetBucketLogging body lacks RGW's elements: %s", r.body)
	}

	var mu sync.Mutex
	acked := map[string]bool{}    // "key operation" of acknowledged writes
	deleting := map[string]bool{} // keys a delete was sent for, answered or not
	sendDelete := func(key string) {
		mu.Lock()
		deleting[key] = true
		mu.Unlock()
	}
	enough := make(chan struct{})
	var once sync.Once
	ack := func(key, op string) {
		mu.Lock()
		defer mu.Unlock()
		acked[key+" "+op] = true
		if len(acked) >= 300 {
			once.Do(func() { close(enough) })
		}
	}
	stop := loadWorkers(8, func(w, i int) {
		key := fmt.Sprintf("w%d-%05d", w, i)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("jr-src"), Key: aws.String(key), Body: strings.NewReader("data")}); err != nil {
			return // in flight at the kill: no promise either way
		}
		ack(key, "REST.PUT.OBJECT")
		if i%4 == 3 {
			sendDelete(key)
		}
		switch {
		case i%4 == 3 && w%2 == 0:
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("jr-src"), Key: aws.String(key)}); err == nil {
				ack(key, "REST.DELETE.OBJECT")
			}
		case i%4 == 3:
			// DeleteObjects: one journal record per deleted key.
			out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("jr-src"),
				Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String(key)}}}})
			if err == nil && len(out.Deleted) == 1 {
				ack(key, "REST.POST.MULTI_OBJECT_DELETE")
			}
		}
	})
	<-enough
	g.Kill()
	stop()
	g.Start()
	g.mustAdmin(t, "bucket", "logging", "flush", "--bucket", "jr-src")
	recs, _ := readLogObjects(t, c, "jr-logs", "j/")
	have := map[string]bool{}
	for _, r := range recs {
		f, err := accesslog.SplitFields(r)
		if err != nil || len(f) != 8 {
			t.Fatalf("journal record %q: %v", r, err)
		}
		// owner bucket time op key size version etag
		if f[1] != "jr-src" {
			t.Fatalf("journal record %q", r)
		}
		if f[3] == "REST.PUT.OBJECT" && (f[5] != "4" || len(f[7]) != 32) {
			t.Fatalf("PUT journal record without size/ETag: %q", r)
		}
		have[f[4]+" "+f[3]] = true
	}
	mu.Lock()
	defer mu.Unlock()
	missing := 0
	for k := range acked {
		if !have[k] {
			missing++
			if missing < 5 {
				t.Errorf("acknowledged %s has no journal record", k)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d acknowledged writes without a record (of %d; %d records)", missing, len(acked), len(recs))
	}

	// Events: all committed ones delivered, then each checked against
	// what the crash left (keys are written once, some deleted once).
	waitQueueEmpty(t, g, topic)
	exists := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("jr-src")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			exists[aws.ToString(o.Key)] = true
		}
	}
	events := rv.snapshot()
	lost := 0
	for _, r := range events {
		name, _ := r["eventName"].(string)
		key, _ := field(r, "s3", "object", "key").(string)
		created := strings.HasPrefix(name, "ObjectCreated:")
		if created && !exists[key] && !deleting[key] || !created && exists[key] {
			lost++
			if lost < 5 {
				t.Errorf("event %s %s was delivered, but the write it reports is not there after the crash", name, key)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d delivered events report writes the crash lost", lost, len(events))
	}
	n := checkVisibleHaveEvents(t, c, rv, "jr-src", false)
	t.Logf("%d events delivered, %d objects left, each with its event", len(events), n)
}

// TestBucketLoggingRollTime: without any flush, records reach the target
// bucket once ObjectRollTime (RGW's extension) has passed.
func TestBucketLoggingRollTime(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	for _, b := range []string{"rt-src", "rt-logs"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("rt-logs"), Policy: aws.String(loggingPolicy("rt-logs", "", "rt-src"))}); err != nil {
		t.Fatal(err)
	}
	doc := `<BucketLoggingStatus xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LoggingEnabled>` +
		`<TargetBucket>rt-logs</TargetBucket><TargetPrefix></TargetPrefix><ObjectRollTime>1</ObjectRollTime>` +
		`</LoggingEnabled></BucketLoggingStatus>`
	if r := (principal{ak: g.AccessKey, sk: g.SecretKey}).do(t, g, "PUT", "/rt-src?logging", doc); r.status != 200 {
		t.Fatalf("PutBucketLogging: %d %s", r.status, r.body)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rt-src"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	// Wait for the condition (delivery), bounded generously for a loaded
	// machine: roll time 1 s, checked every second.
	deadline := time.Now().Add(60 * time.Second)
	for {
		recs, _ := readLogObjects(t, c, "rt-logs", "")
		if strings.Contains(strings.Join(recs, "\n"), "REST.PUT.OBJECT k ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record delivered within 60 s of a 1 s roll time: %v", recs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
