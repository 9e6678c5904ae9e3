package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Writes and deletes that AWS authorizes beyond their route's action,
// against a real `cairn serve` with two users and anonymous:
// DeleteObjects per key and version, a bucket WRITE grant that cannot
// destroy versions, and object lock / tagging headers that need their own
// actions. Every refusal is checked against the stored state.
func TestAuthzWrites(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	keys := map[string][2]string{}
	for _, u := range []string{"alice", "bob"} {
		out, err := g.Admin("user", "create", "--uid", u, "--display-name", u)
		if err != nil {
			t.Fatal(err)
		}
		keys[u] = [2]string{jsonField(t, out, "access_key"), jsonField(t, out, "secret_key")}
	}
	alice := sdkClient(g, keys["alice"][0], keys["alice"][1])
	bob := sdkClient(g, keys["bob"][0], keys["bob"][1])
	anon := s3.New(s3.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	put := func(c *s3.Client, b, k, data string) string {
		t.Helper()
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &k, Body: strings.NewReader(data)})
		must(err, "PutObject "+b+"/"+k)
		return aws.ToString(out.VersionId)
	}
	// versionExists reads the bucket's version list as its owner (HEAD
	// would need READ on a version bob owns).
	versionExists := func(b, k, vid string) bool {
		t.Helper()
		out, err := alice.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &b, Prefix: &k})
		must(err, "ListObjectVersions")
		for _, v := range out.Versions {
			if aws.ToString(v.Key) == k && aws.ToString(v.VersionId) == vid {
				return true
			}
		}
		return false
	}
	multi := func(c *s3.Client, b string, bypass bool, ids ...types.ObjectIdentifier) *s3.DeleteObjectsOutput {
		t.Helper()
		in := &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: ids}}
		if bypass {
			in.BypassGovernanceRetention = aws.Bool(true)
		}
		out, err := c.DeleteObjects(ctx, in)
		must(err, "DeleteObjects")
		return out
	}
	id := func(k, vid string) types.ObjectIdentifier {
		o := types.ObjectIdentifier{Key: aws.String(k)}
		if vid != "" {
			o.VersionId = aws.String(vid)
		}
		return o
	}
	// denied summarizes a DeleteObjects result: the refused keys with
	// their codes, then the deleted ones.
	denied := func(out *s3.DeleteObjectsOutput) string {
		var errs, dels []string
		for _, e := range out.Errors {
			errs = append(errs, aws.ToString(e.Key)+":"+aws.ToString(e.Code))
		}
		for _, d := range out.Deleted {
			dels = append(dels, aws.ToString(d.Key))
		}
		return fmt.Sprintf("errors %v deleted %v", errs, dels)
	}

	// A versioned bucket of alice's where bob holds a WRITE grant.
	b := "aw-ver"
	_, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b})
	must(err, "CreateBucket")
	_, err = alice.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
	must(err, "PutBucketVersioning")
	_, err = alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, GrantFullControl: aws.String(`id="alice"`), GrantWrite: aws.String(`id="bob"`)})
	must(err, "PutBucketAcl")
	v1 := put(alice, b, "k", "one")
	v2 := put(alice, b, "k", "two")

	// Bob can create and overwrite objects, and delete current ones (a
	// delete marker), but not destroy a version: per key, in one request.
	bv := put(bob, b, "bobs", "b")
	put(bob, b, "k2", "x")
	out := multi(bob, b, false, id("k", v1), id("k2", ""), id("bobs", bv))
	if got := denied(out); got != "errors [k:AccessDenied bobs:AccessDenied] deleted [k2]" {
		t.Errorf("bob DeleteObjects: %s", got)
	}
	if !versionExists(b, "k", v1) || !versionExists(b, "bobs", bv) {
		t.Error("bob's refused version deletes removed a version")
	}
	if len(out.Deleted) == 1 && !aws.ToBool(out.Deleted[0].DeleteMarker) {
		t.Error("bob's delete of k2 did not make a delete marker")
	}
	_, err = bob.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: &v2})
	if apiCode(err) != "AccessDenied" || !versionExists(b, "k", v2) {
		t.Errorf("bob DeleteObject version: %v", err)
	}
	// Anonymous gets nothing here.
	_, err = anon.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: &v2})
	if apiCode(err) != "AccessDenied" || !versionExists(b, "k", v2) {
		t.Errorf("anonymous DeleteObject version: %v", err)
	}

	// The owner's own explicit Deny on s3:DeleteObjectVersion holds per key
	// in DeleteObjects, as in DeleteObject.
	_, err = alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: aws.String(`{"Version":"2012-10-17","Statement":[
	 {"Sid":"NoPurge","Effect":"Deny","Principal":"*","Action":"s3:DeleteObjectVersion","Resource":"arn:aws:s3:::aw-ver/*"}]}`)})
	must(err, "PutBucketPolicy")
	put(alice, b, "k3", "x")
	out = multi(alice, b, false, id("k", v1), id("k3", ""))
	if got := denied(out); got != "errors [k:AccessDenied] deleted [k3]" {
		t.Errorf("owner DeleteObjects under Deny: %s", got)
	}
	if !versionExists(b, "k", v1) {
		t.Error("the owner's denied version delete removed it")
	}
	_, err = alice.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1})
	if apiCode(err) != "AccessDenied" || !versionExists(b, "k", v1) {
		t.Errorf("owner DeleteObject version under Deny: %v", err)
	}
	// Lifting the Deny lets the owner purge.
	_, err = alice.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: &b})
	must(err, "DeleteBucketPolicy")
	out = multi(alice, b, false, id("k", v1))
	if got := denied(out); got != "errors [] deleted [k]" || versionExists(b, "k", v1) {
		t.Errorf("owner DeleteObjects version: %s", got)
	}

	// Object lock: headers need s3:PutObjectRetention / PutObjectLegalHold
	// / PutObjectTagging besides s3:PutObject.
	lb := "aw-lock"
	_, err = alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &lb, ObjectLockEnabledForBucket: aws.Bool(true)})
	must(err, "CreateBucket lock")
	_, err = alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &lb, GrantFullControl: aws.String(`id="alice"`), GrantWrite: aws.String(`id="bob"`)})
	must(err, "PutBucketAcl lock")
	years := time.Now().Add(5 * 365 * 24 * time.Hour)
	for _, tc := range []struct {
		name string
		set  func(*s3.PutObjectInput)
	}{
		{"compliance", func(in *s3.PutObjectInput) {
			in.ObjectLockMode, in.ObjectLockRetainUntilDate = types.ObjectLockModeCompliance, &years
		}},
		{"legal hold", func(in *s3.PutObjectInput) { in.ObjectLockLegalHoldStatus = types.ObjectLockLegalHoldStatusOn }},
		{"tagging", func(in *s3.PutObjectInput) { in.Tagging = aws.String("a=b") }},
	} {
		key := "bob-" + strings.ReplaceAll(tc.name, " ", "-")
		in := &s3.PutObjectInput{Bucket: &lb, Key: &key, Body: strings.NewReader("locked")}
		tc.set(in)
		if _, err := bob.PutObject(ctx, in); apiCode(err) != "AccessDenied" {
			t.Errorf("bob PutObject %s: %v", tc.name, err)
		}
		if _, err := alice.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &lb, Key: &key}); apiCode(err) != "NotFound" {
			t.Errorf("bob's refused %s PutObject stored an object: %v", tc.name, err)
		}
	}
	_, err = bob.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &lb, Key: aws.String("bob-mp"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: &years})
	if apiCode(err) != "AccessDenied" {
		t.Errorf("bob CreateMultipartUpload with retention: %v", err)
	}
	ups, err := alice.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &lb})
	must(err, "ListMultipartUploads")
	if len(ups.Uploads) != 0 {
		t.Errorf("a refused CreateMultipartUpload left %d uploads", len(ups.Uploads))
	}
	src := put(bob, lb, "bob-plain", "plain") // plain writes still work
	_, err = bob.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &lb, Key: aws.String("bob-copy"), CopySource: aws.String(lb + "/bob-plain"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: &years})
	if apiCode(err) != "AccessDenied" {
		t.Errorf("bob CopyObject with retention: %v", err)
	}
	if _, err := alice.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &lb, Key: aws.String("bob-copy")}); apiCode(err) != "NotFound" {
		t.Errorf("a refused copy stored an object: %v", err)
	}

	// The owner may lock (GOVERNANCE), and bypass it to delete; bob,
	// allowed s3:DeleteObjectVersion by policy but not the bypass, may not,
	// in DeleteObjects as in DeleteObject.
	soon := time.Now().Add(24 * time.Hour)
	gv, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: &lb, Key: aws.String("gov"), Body: strings.NewReader("g"),
		ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: &soon})
	must(err, "owner PutObject with retention")
	gvid := aws.ToString(gv.VersionId)
	_, err = alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &lb, Policy: aws.String(`{"Version":"2012-10-17","Statement":[
	 {"Sid":"BobPurges","Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:DeleteObjectVersion","Resource":"arn:aws:s3:::aw-lock/*"}]}`)})
	must(err, "PutBucketPolicy lock")
	out = multi(bob, lb, true, id("gov", gvid), id("bob-plain", src))
	if got := denied(out); got != "errors [gov:AccessDenied] deleted [bob-plain]" || !versionExists(lb, "gov", gvid) {
		t.Errorf("bob DeleteObjects with bypass on a GOVERNANCE version: %s", got)
	}
	_, err = bob.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &lb, Key: aws.String("gov"), VersionId: &gvid, BypassGovernanceRetention: aws.Bool(true)})
	if apiCode(err) != "AccessDenied" || !versionExists(lb, "gov", gvid) {
		t.Errorf("bob DeleteObject with bypass: %v", err)
	}
	out = multi(alice, lb, false, id("gov", gvid))
	if got := denied(out); got != "errors [gov:AccessDenied] deleted []" || !versionExists(lb, "gov", gvid) {
		t.Errorf("owner DeleteObjects without bypass: %s", got)
	}
	out = multi(alice, lb, true, id("gov", gvid))
	if got := denied(out); got != "errors [] deleted [gov]" || versionExists(lb, "gov", gvid) {
		t.Errorf("owner DeleteObjects with bypass: %s", got)
	}
}
