package tests

import (
	"bytes"
	"context"
	"crypto/md5"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// classGateway serves STANDARD_IA as a pool of the main store and GLACIER
// in a data directory of its own.
func classGateway(t *testing.T, extra ...string) (*Gateway, string) {
	glacier := filepath.Join(t.TempDir(), "glacier")
	args := append([]string{"--storage-classes", "STANDARD_IA,GLACIER=" + glacier}, extra...)
	return StartGateway(t, args...), glacier
}

func headClass(t *testing.T, c *s3.Client, bucket, key string) types.StorageClass {
	t.Helper()
	out, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("head %s: %v", key, err)
	}
	return out.StorageClass
}

// TestStorageClassesSDK: x-amz-storage-class on PUT, multipart and copy,
// as aws-sdk-go-v2 sends and reads it.
func TestStorageClassesSDK(t *testing.T) {
	g, _ := classGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("scb")}); err != nil {
		t.Fatal(err)
	}
	put := func(key string, class types.StorageClass) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("scb"), Key: aws.String(key),
			Body: strings.NewReader("data of " + key), StorageClass: class})
		return err
	}
	for key, class := range map[string]types.StorageClass{"ia": types.StorageClassStandardIa, "gl": types.StorageClassGlacier, "std": "", "std2": types.StorageClassStandard} {
		if err := put(key, class); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	if got := headClass(t, c, "scb", "ia"); got != types.StorageClassStandardIa {
		t.Errorf("HEAD ia: class %q", got)
	}
	if got := headClass(t, c, "scb", "std2"); got != "" {
		t.Errorf("HEAD of a STANDARD object sends x-amz-storage-class %q (AWS omits it)", got)
	}
	gl, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("scb"), Key: aws.String("gl")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(gl.Body)
	gl.Body.Close()
	if gl.StorageClass != types.StorageClassGlacier || string(body) != "data of gl" {
		t.Errorf("GET gl: class %q body %q", gl.StorageClass, body)
	}
	for _, bad := range []types.StorageClass{types.StorageClassReducedRedundancy, "BOGUS"} {
		if err := put("bad", bad); apiCode(err) != "InvalidStorageClass" {
			t.Errorf("PUT with class %s: %v, want InvalidStorageClass", bad, err)
		}
	}
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("scb")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]types.ObjectStorageClass{}
	for _, o := range lo.Contents {
		got[aws.ToString(o.Key)] = o.StorageClass
	}
	if got["ia"] != "STANDARD_IA" || got["gl"] != "GLACIER" || got["std"] != "STANDARD" || got["std2"] != "STANDARD" || len(got) != 4 {
		t.Errorf("ListObjectsV2 classes %v", got)
	}
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("scb"), Prefix: aws.String("gl")})
	if err != nil || len(lv.Versions) != 1 || lv.Versions[0].StorageClass != "GLACIER" {
		t.Errorf("ListObjectVersions: %+v %v", lv, err)
	}
	attrs, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("scb"), Key: aws.String("ia"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesStorageClass}})
	if err != nil || attrs.StorageClass != types.StorageClassStandardIa {
		t.Errorf("GetObjectAttributes: %+v %v", attrs, err)
	}

	// Multipart: the upload, its parts and the object carry the class.
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("scb"), Key: aws.String("mp"),
		StorageClass: types.StorageClassStandardIa})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("scb"), Key: aws.String("mp"),
		StorageClass: "BOGUS"}); apiCode(err) != "InvalidStorageClass" {
		t.Errorf("CreateMultipartUpload with a bad class: %v", err)
	}
	part := bytes.Repeat([]byte("m"), 5<<20)
	var done []types.CompletedPart
	for i, p := range [][]byte{part, []byte("tail")} {
		pr, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("scb"), Key: aws.String("mp"), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: pr.ETag})
	}
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("scb")})
	if err != nil || len(lu.Uploads) != 1 || lu.Uploads[0].StorageClass != "STANDARD_IA" {
		t.Errorf("ListMultipartUploads: %+v %v", lu, err)
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("scb"), Key: aws.String("mp"), UploadId: up.UploadId})
	if err != nil || lp.StorageClass != "STANDARD_IA" {
		t.Errorf("ListParts: class %q %v", lp.StorageClass, err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("scb"), Key: aws.String("mp"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	if got := headClass(t, c, "scb", "mp"); got != types.StorageClassStandardIa {
		t.Errorf("HEAD mp: class %q", got)
	}

	// Copy in place to change the class; a copy elsewhere is STANDARD
	// unless it asks.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("scb"), Key: aws.String("mp"),
		CopySource: aws.String("scb/mp"), StorageClass: types.StorageClassGlacier}); err != nil {
		t.Fatalf("copy in place: %v", err)
	}
	if got := headClass(t, c, "scb", "mp"); got != types.StorageClassGlacier {
		t.Errorf("HEAD mp after the copy: class %q", got)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("scb"), Key: aws.String("mp2"), CopySource: aws.String("scb/mp")}); err != nil {
		t.Fatal(err)
	}
	if got := headClass(t, c, "scb", "mp2"); got != "" {
		t.Errorf("copy without a class: %q, want STANDARD", got)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("scb"), Key: aws.String("mp"), CopySource: aws.String("scb/mp")}); apiCode(err) != "InvalidRequest" {
		t.Errorf("copy in place without a change: %v, want InvalidRequest", err)
	}
	obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("scb"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(obj.Body)
	obj.Body.Close()
	if !bytes.Equal(body, append(append([]byte{}, part...), "tail"...)) {
		t.Errorf("mp after the copy: %d bytes", len(body))
	}
	// Lifecycle transitions only to configured classes.
	_, err = c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("scb"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
			Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
			Transitions: []types.Transition{{Days: aws.Int32(30), StorageClass: types.TransitionStorageClassDeepArchive}}}}}})
	if apiCode(err) != "InvalidStorageClass" {
		t.Errorf("transition to an unconfigured class: %v, want InvalidStorageClass", err)
	}
}

// radosLs lists a pool of the gateway's main store through its admin API.
func radosLs(t *testing.T, g *Gateway, pool string) []string {
	t.Helper()
	cmd := exec.Command(cairnBin, "rados", "--endpoint", g.Endpoint, "--pool", pool, "ls")
	cmd.Env = append(os.Environ(), "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rados ls %s: %v: %s", pool, err, out)
	}
	return strings.Fields(string(out))
}

// TestLifecycleTransition runs real passes with a 2 s lifecycle day: a
// plain, a multipart and an SSE-S3 object move to GLACIER (a data
// directory of its own) and a noncurrent version to STANDARD_IA; each
// reads back identically with the same version id and ETag, the default
// pool is emptied of them, and RGW's transition events reach an endpoint.
func TestLifecycleTransition(t *testing.T) {
	rv := newReceiver(t)
	g, glacier := classGateway(t, append([]string{"--lc-debug-interval", "2s", "--notif-scan-interval", "1s", "--lc-max-objs", "4"}, sseGatewayFlags()...)...)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "trb")
	awsCLI(t, g, "s3api", "put-bucket-versioning", "--bucket", "trb", "--versioning-configuration", "Status=Enabled")
	out := awsCLI(t, g, "sns", "create-topic", "--name=trtopic",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	arn := jsonField(t, out, "TopicArn")
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "trb",
		`--notification-configuration={"TopicConfigurations": [{"Id": "tr", "TopicArn": "`+arn+`", "Events": ["s3:ObjectLifecycle:Transition:*", "s3:LifecycleTransition"]}]}`)

	objects := map[string][]byte{}
	versions := map[string]string{}
	putObj := func(key string, body []byte, in *s3.PutObjectInput) {
		in.Bucket, in.Key, in.Body = aws.String("trb"), aws.String(key), bytes.NewReader(body)
		o, err := c.PutObject(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		objects[key], versions[key] = body, aws.ToString(o.VersionId)
	}
	putObj("tr/plain", bytes.Repeat([]byte("p"), 4096), &s3.PutObjectInput{})
	putObj("tr/sse", bytes.Repeat([]byte("secret"), 300000), &s3.PutObjectInput{ServerSideEncryption: types.ServerSideEncryptionAes256})
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("trb"), Key: aws.String("tr/mp")})
	if err != nil {
		t.Fatal(err)
	}
	mpBody := append(bytes.Repeat([]byte("m"), 5<<20), "last part"...)
	var parts []types.CompletedPart
	for i, p := range [][]byte{mpBody[:5<<20], mpBody[5<<20:]} {
		pr, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("trb"), Key: aws.String("tr/mp"), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: pr.ETag})
	}
	mp, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("trb"), Key: aws.String("tr/mp"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	objects["tr/mp"], versions["tr/mp"] = mpBody, aws.ToString(mp.VersionId)
	putObj("nc/a", []byte("old version"), &s3.PutObjectInput{})
	ncOld := versions["nc/a"]
	putObj("nc/a", []byte("new version"), &s3.PutObjectInput{})
	etags := map[string]string{}
	for key := range objects {
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("trb"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		etags[key] = aws.ToString(h.ETag)
	}
	before := len(radosLs(t, g, "default.rgw.buckets.data"))

	awsCLI(t, g, "s3api", "put-bucket-lifecycle-configuration", "--bucket", "trb", "--lifecycle-configuration", `{"Rules": [
		{"ID": "cold", "Status": "Enabled", "Filter": {"Prefix": "tr/"}, "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]},
		{"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "nc/"}, "NoncurrentVersionTransitions": [{"NoncurrentDays": 1, "StorageClass": "STANDARD_IA"}]}]}`)

	deadline := time.Now().Add(2 * time.Minute)
	for {
		moved := 0
		for _, key := range []string{"tr/plain", "tr/sse", "tr/mp"} {
			if headClass(t, c, "trb", key) == types.StorageClassGlacier {
				moved++
			}
		}
		lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("trb"), Prefix: aws.String("nc/")})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range lv.Versions {
			if aws.ToString(v.VersionId) == ncOld && v.StorageClass == "STANDARD_IA" {
				moved++
			} else if aws.ToBool(v.IsLatest) && v.StorageClass != "STANDARD" {
				t.Fatalf("the current version of nc/a moved to %s", v.StorageClass)
			}
		}
		if moved == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transitions did not happen: %d of 4 moved; log:\n%s", moved, g.Log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Same bytes, version id and ETag wherever the data went.
	for key, want := range objects {
		if key == "nc/a" {
			continue
		}
		o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("trb"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(o.Body)
		o.Body.Close()
		if err != nil || md5.Sum(got) != md5.Sum(want) || aws.ToString(o.VersionId) != versions[key] || aws.ToString(o.ETag) != etags[key] {
			t.Errorf("%s after the move: %d bytes, version %s, etag %s (%v)", key, len(got), aws.ToString(o.VersionId), aws.ToString(o.ETag), err)
		}
	}
	o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("trb"), Key: aws.String("nc/a"), VersionId: aws.String(ncOld)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(o.Body)
	o.Body.Close()
	if string(got) != "old version" || o.StorageClass != types.StorageClassStandardIa {
		t.Errorf("noncurrent nc/a: %q class %q", got, o.StorageClass)
	}
	// The default pool lost the moved stripes once GC ran (gc-min-wait 1s):
	// plain 1, sse 1, mp 3 (5 MiB part = 2 stripes, tail part 1); nc/a's
	// 11 bytes were inline in its entry (--inline-max) and moved out of it
	// to a stripe in STANDARD_IA's pool.
	for {
		n := len(radosLs(t, g, "default.rgw.buckets.data"))
		if n == before-5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("default data pool holds %d objects, want %d", n, before-5)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ia := radosLs(t, g, "default.rgw.standard_ia.data"); len(ia) != 1 {
		t.Errorf("STANDARD_IA pool: %v", ia)
	}
	// Events: one per version moved, the current ones also as AWS's
	// LifecycleTransition.
	wantEv := map[string]int{}
	for _, key := range []string{"tr/plain", "tr/sse", "tr/mp"} {
		wantEv["ObjectLifecycle:Transition:Current "+key+" "+versions[key]] = 1
		wantEv["LifecycleTransition "+key+" "+versions[key]] = 1
	}
	wantEv["ObjectLifecycle:Transition:NonCurrent nc/a "+ncOld] = 1
	for {
		n := eventCounts(rv)
		ok := len(n) == len(wantEv)
		for k, v := range wantEv {
			ok = ok && n[k] == v
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %v, want %v", n, wantEv)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st := lcStatusOf(t, g, "trb"); st.Expired != 0 {
		t.Errorf("lc status: %+v", st)
	}
	// The GLACIER data directory holds the moved stripes.
	g.Stop()
	ls, err := exec.Command(cairnBin, "rados", "--data-dir", glacier, "--pool", "default.rgw.glacier.data", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("rados ls of the GLACIER directory: %v: %s", err, ls)
	}
	if n := len(strings.Fields(string(ls))); n != 5 {
		t.Errorf("GLACIER directory holds %d objects, want 5: %s", n, ls)
	}
	g.Start()
	if got := headClass(t, c, "trb", "tr/mp"); got != types.StorageClassGlacier {
		t.Errorf("after a restart: class %q", got)
	}
}
