package tests

// Conformance details of issue 22, each checked with aws-sdk-go-v2 against
// what the AWS API reference says the operation answers.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// wantErr fails unless err is the S3 error code with that HTTP status.
func wantErr(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	if httpStatus(err) != status || apiCode(err) != code {
		t.Fatalf("%s: got %d %q (%v), want %d %s", what, httpStatus(err), apiCode(err), err, status, code)
	}
}

// CopyObject source conditions (AWS CopyObject: every failed
// x-amz-copy-source-if-* is 412 PreconditionFailed, including
// if-none-match matching and if-modified-since not modified, which GET
// answers with 304), conditional writes (PutObject and
// CompleteMultipartUpload If-Match / If-None-Match) and conditional deletes
// (DeleteObject If-Match, x-amz-if-match-last-modified-time,
// x-amz-if-match-size; DeleteObjects ETag, LastModifiedTime, Size).
func TestConformConditionalRequests(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	for _, b := range []string{"condu", "condv"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("condv"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put := func(b, k, body string) *s3.PutObjectOutput {
		t.Helper()
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	src := put("condu", "src", "source")
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("condu"), Key: aws.String("src")})
	if err != nil {
		t.Fatal(err)
	}
	past, future := head.LastModified.Add(-time.Hour), head.LastModified.Add(time.Hour)

	t.Run("CopyObject", func(t *testing.T) {
		cp := func(mod func(*s3.CopyObjectInput)) error {
			in := &s3.CopyObjectInput{Bucket: aws.String("condu"), Key: aws.String("dst"), CopySource: aws.String("condu/src")}
			mod(in)
			_, err := c.CopyObject(ctx, in)
			return err
		}
		for _, tc := range []struct {
			name string
			mod  func(*s3.CopyObjectInput)
			ok   bool
		}{
			{"if-none-match matching", func(in *s3.CopyObjectInput) { in.CopySourceIfNoneMatch = src.ETag }, false},
			{"if-none-match other", func(in *s3.CopyObjectInput) { in.CopySourceIfNoneMatch = aws.String(`"0123"`) }, true},
			{"if-modified-since not modified", func(in *s3.CopyObjectInput) { in.CopySourceIfModifiedSince = aws.Time(future) }, false},
			{"if-modified-since modified", func(in *s3.CopyObjectInput) { in.CopySourceIfModifiedSince = aws.Time(past) }, true},
			{"if-match other", func(in *s3.CopyObjectInput) { in.CopySourceIfMatch = aws.String(`"0123"`) }, false},
			{"if-unmodified-since modified", func(in *s3.CopyObjectInput) { in.CopySourceIfUnmodifiedSince = aws.Time(past) }, false},
			// AWS: if-none-match false and if-modified-since true: 412.
			{"if-none-match false, if-modified-since true", func(in *s3.CopyObjectInput) {
				in.CopySourceIfNoneMatch, in.CopySourceIfModifiedSince = src.ETag, aws.Time(past)
			}, false},
			// AWS: if-match true and if-unmodified-since false: copied.
			{"if-match true, if-unmodified-since false", func(in *s3.CopyObjectInput) {
				in.CopySourceIfMatch, in.CopySourceIfUnmodifiedSince = src.ETag, aws.Time(past)
			}, true},
		} {
			err := cp(tc.mod)
			if tc.ok && err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			if !tc.ok && (httpStatus(err) != 412 || apiCode(err) != "PreconditionFailed") {
				t.Errorf("%s: got %d %q (%v), want 412 PreconditionFailed", tc.name, httpStatus(err), apiCode(err), err)
			}
		}
	})

	t.Run("PutObject", func(t *testing.T) {
		cur := put("condu", "w", "one")
		p := func(body string, mod func(*s3.PutObjectInput)) (*s3.PutObjectOutput, error) {
			in := &s3.PutObjectInput{Bucket: aws.String("condu"), Key: aws.String("w"), Body: strings.NewReader(body)}
			mod(in)
			return c.PutObject(ctx, in)
		}
		// If-None-Match: <etag> (RGW): refused while the object has it.
		_, err := p("two", func(in *s3.PutObjectInput) { in.IfNoneMatch = cur.ETag })
		wantErr(t, "If-None-Match current etag", err, 412, "PreconditionFailed")
		two, err := p("two", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String(`"0123"`) })
		if err != nil {
			t.Fatalf("If-None-Match other etag: %v", err)
		}
		if _, err := p("new", func(in *s3.PutObjectInput) {
			in.Key, in.IfNoneMatch = aws.String("w-new"), cur.ETag
		}); err != nil {
			t.Fatalf("If-None-Match etag on a missing key: %v", err)
		}
		_, err = p("three", func(in *s3.PutObjectInput) { in.IfMatch = cur.ETag })
		wantErr(t, "If-Match stale etag", err, 412, "PreconditionFailed")
		if _, err := p("three", func(in *s3.PutObjectInput) { in.IfMatch = two.ETag }); err != nil {
			t.Fatalf("If-Match current etag: %v", err)
		}
	})

	t.Run("CompleteMultipartUpload", func(t *testing.T) {
		cur := put("condu", "mp", "one")
		complete := func(mod func(*s3.CompleteMultipartUploadInput)) (*s3.CompleteMultipartUploadOutput, error) {
			cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("condu"), Key: aws.String("mp")})
			if err != nil {
				t.Fatal(err)
			}
			part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("condu"), Key: aws.String("mp"), UploadId: cu.UploadId,
				PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part"))})
			if err != nil {
				t.Fatal(err)
			}
			in := &s3.CompleteMultipartUploadInput{Bucket: aws.String("condu"), Key: aws.String("mp"), UploadId: cu.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}}
			mod(in)
			return c.CompleteMultipartUpload(ctx, in)
		}
		_, err := complete(func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = cur.ETag })
		wantErr(t, "complete If-None-Match current etag", err, 412, "PreconditionFailed")
		_, err = complete(func(in *s3.CompleteMultipartUploadInput) { in.IfMatch = aws.String(`"0123"`) })
		wantErr(t, "complete If-Match other etag", err, 412, "PreconditionFailed")
		done, err := complete(func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = aws.String(`"0123"`) })
		if err != nil {
			t.Fatalf("complete If-None-Match other etag: %v", err)
		}
		if _, err := complete(func(in *s3.CompleteMultipartUploadInput) { in.IfMatch = done.ETag }); err != nil {
			t.Fatalf("complete If-Match current: %v", err)
		}
	})

	for _, b := range []string{"condu", "condv"} {
		t.Run("DeleteObject/"+b, func(t *testing.T) {
			del := func(mod func(*s3.DeleteObjectInput)) (*s3.DeleteObjectOutput, error) {
				in := &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("d")}
				mod(in)
				return c.DeleteObject(ctx, in)
			}
			// AWS: If-Match on a key that does not exist is 404 NoSuchKey.
			_, err := del(func(in *s3.DeleteObjectInput) { in.IfMatch = aws.String("*") })
			wantErr(t, "If-Match * on a missing key", err, 404, "NoSuchKey")
			_, err = del(func(in *s3.DeleteObjectInput) { in.IfMatch = aws.String(`"0123"`) })
			wantErr(t, "If-Match etag on a missing key", err, 404, "NoSuchKey")
			// The time and size conditions hold when there is no object.
			if _, err := del(func(in *s3.DeleteObjectInput) { in.IfMatchSize = aws.Int64(3) }); err != nil {
				t.Fatalf("x-amz-if-match-size on a missing key: %v", err)
			}

			o := put(b, "d", "abc")
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("d")})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				mod  func(*s3.DeleteObjectInput)
			}{
				{"If-Match other etag", func(in *s3.DeleteObjectInput) { in.IfMatch = aws.String(`"0123"`) }},
				{"x-amz-if-match-size other", func(in *s3.DeleteObjectInput) { in.IfMatchSize = aws.Int64(4) }},
				{"x-amz-if-match-last-modified-time other", func(in *s3.DeleteObjectInput) {
					in.IfMatchLastModifiedTime = aws.Time(h.LastModified.Add(-time.Minute))
				}},
				{"etag right, size wrong", func(in *s3.DeleteObjectInput) { in.IfMatch, in.IfMatchSize = o.ETag, aws.Int64(4) }},
			} {
				_, err := del(tc.mod)
				wantErr(t, tc.name, err, 412, "PreconditionFailed")
			}
			if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("d")}); err != nil {
				t.Fatalf("a refused delete removed the object: %v", err)
			}
			if _, err := del(func(in *s3.DeleteObjectInput) {
				in.IfMatch, in.IfMatchSize, in.IfMatchLastModifiedTime = o.ETag, aws.Int64(3), h.LastModified
			}); err != nil {
				t.Fatalf("all conditions right: %v", err)
			}
			put(b, "d", "abc")
			if _, err := del(func(in *s3.DeleteObjectInput) { in.IfMatch = aws.String("*") }); err != nil {
				t.Fatalf("If-Match * on an object: %v", err)
			}
			if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("d")}); httpStatus(err) != 404 {
				t.Fatalf("object still there: %v", err)
			}
		})
	}

	t.Run("DeleteObjects", func(t *testing.T) {
		o := put("condu", "m", "abcd")
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("condu"), Key: aws.String("m")})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []types.ObjectIdentifier{
			{Key: aws.String("m"), ETag: aws.String(`"0123"`)},
			{Key: aws.String("m"), Size: aws.Int64(5)},
			{Key: aws.String("m"), LastModifiedTime: aws.Time(h.LastModified.Add(time.Minute))},
		} {
			res, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("condu"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{id}}})
			if err != nil || len(res.Errors) != 1 || len(res.Deleted) != 0 ||
				aws.ToString(res.Errors[0].Code) != "PreconditionFailed" || aws.ToString(res.Errors[0].Key) != "m" {
				t.Fatalf("DeleteObjects %+v: %+v %v", id, res, err)
			}
		}
		res, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("condu"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
			{Key: aws.String("m"), ETag: o.ETag, Size: aws.Int64(4), LastModifiedTime: h.LastModified}}}})
		if err != nil || len(res.Errors) != 0 || len(res.Deleted) != 1 {
			t.Fatalf("DeleteObjects, conditions right: %+v %v", res, err)
		}
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("condu"), Key: aws.String("m")}); httpStatus(err) != 404 {
			t.Fatalf("object still there: %v", err)
		}
	})
}

// Object lock (AWS PutObjectLockConfiguration, PutObjectRetention,
// DeleteObjects): lock enabled on an existing versioned bucket, a zero or
// negative default period refused with InvalidRetentionPeriod, GOVERNANCE
// made COMPLIANCE or shortened only with the bypass, DeleteObjects honouring
// x-amz-bypass-governance-retention.
func TestConformObjectLock(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	for _, b := range []string{"lkplain", "lkvers"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(days int32) *types.ObjectLockConfiguration {
		return &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(days)}}}
	}
	_, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("lkplain"), ObjectLockConfiguration: cfg(1)})
	wantErr(t, "lock on an unversioned bucket", err, 409, "InvalidBucketState")

	b := aws.String("lkvers")
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	old, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("old"), Body: strings.NewReader("before lock")})
	if err != nil {
		t.Fatal(err)
	}
	for _, days := range []int32{0, -1} {
		_, err = c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: b, ObjectLockConfiguration: cfg(days)})
		wantErr(t, fmt.Sprintf("Days %d", days), err, 400, "InvalidRetentionPeriod")
	}
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: b, ObjectLockConfiguration: cfg(1)}); err != nil {
		t.Fatalf("lock on an existing versioned bucket: %v", err)
	}
	got, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: b})
	if err != nil || got.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled ||
		aws.ToInt32(got.ObjectLockConfiguration.Rule.DefaultRetention.Days) != 1 {
		t.Fatalf("GetObjectLockConfiguration: %+v %v", got, err)
	}
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
	wantErr(t, "suspend a locked bucket", err, 409, "InvalidBucketState")
	// Versions written before the lock have none; new ones get the default.
	if _, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: b, Key: aws.String("old"), VersionId: old.VersionId}); httpStatus(err) != 404 {
		t.Fatalf("retention of a version older than the lock: %v", err)
	}
	v, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("g"), Body: strings.NewReader("governed")})
	if err != nil {
		t.Fatal(err)
	}
	ret, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: b, Key: aws.String("g"), VersionId: v.VersionId})
	if err != nil || ret.Retention.Mode != types.ObjectLockRetentionModeGovernance {
		t.Fatalf("default retention: %+v %v", ret, err)
	}
	until := *ret.Retention.RetainUntilDate
	setRet := func(mode types.ObjectLockRetentionMode, u time.Time, bypass bool) error {
		_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: b, Key: aws.String("g"), VersionId: v.VersionId,
			Retention: &types.ObjectLockRetention{Mode: mode, RetainUntilDate: aws.Time(u)}, BypassGovernanceRetention: aws.Bool(bypass)})
		return err
	}
	wantErr(t, "GOVERNANCE -> COMPLIANCE without bypass", setRet(types.ObjectLockRetentionModeCompliance, until.Add(time.Hour), false), 403, "AccessDenied")
	wantErr(t, "GOVERNANCE shortened without bypass", setRet(types.ObjectLockRetentionModeGovernance, until.Add(-time.Hour), false), 403, "AccessDenied")
	if err := setRet(types.ObjectLockRetentionModeGovernance, until.Add(time.Hour), false); err != nil {
		t.Fatalf("GOVERNANCE extended: %v", err)
	}
	if err := setRet(types.ObjectLockRetentionModeGovernance, until, true); err != nil {
		t.Fatalf("GOVERNANCE shortened with bypass: %v", err)
	}

	// DeleteObjects: refused per key without the bypass, done with it.
	del := func(bypass bool) *s3.DeleteObjectsOutput {
		t.Helper()
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, BypassGovernanceRetention: aws.Bool(bypass),
			Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("g"), VersionId: v.VersionId}}}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := del(false); len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" || len(out.Deleted) != 0 {
		t.Fatalf("DeleteObjects of a governed version without bypass: %+v", out)
	}
	if out := del(true); len(out.Errors) != 0 || len(out.Deleted) != 1 || aws.ToString(out.Deleted[0].VersionId) != aws.ToString(v.VersionId) {
		t.Fatalf("DeleteObjects with bypass: %+v", out)
	}
	if err := setRet(types.ObjectLockRetentionModeCompliance, until, false); httpStatus(err) != 404 {
		t.Fatalf("the version is still there: %v", err)
	}

	// With the bypass, GOVERNANCE may become COMPLIANCE.
	v2, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("g"), Body: strings.NewReader("again")})
	if err != nil {
		t.Fatal(err)
	}
	v = v2
	if err := setRet(types.ObjectLockRetentionModeCompliance, until.Add(time.Hour), true); err != nil {
		t.Fatalf("GOVERNANCE -> COMPLIANCE with bypass: %v", err)
	}
	if out := del(true); len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
		t.Fatalf("DeleteObjects of a COMPLIANCE version with bypass: %+v", out)
	}
}

// Lifecycle documents (AWS PutBucketLifecycleConfiguration, RGW's Filter
// forms): predicates side by side without And are their conjunction and
// come back as And; a rule without ID gets a generated one; objects a rule
// will expire carry x-amz-expiration on PUT, HEAD and GET (AWS: expiry-date
// in HTTP date form at the midnight UTC after Days, and the rule's ID).
func TestConformLifecycleDocuments(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("lcdocs")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: b,
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{
			{Status: types.ExpirationStatusEnabled, Expiration: &types.LifecycleExpiration{Days: aws.Int32(3)},
				Filter: &types.LifecycleRuleFilter{Prefix: aws.String("logs/"), Tag: &types.Tag{Key: aws.String("k"), Value: aws.String("v")}}},
			{ID: aws.String("big"), Status: types.ExpirationStatusEnabled, Expiration: &types.LifecycleExpiration{Days: aws.Int32(10)},
				Filter: &types.LifecycleRuleFilter{ObjectSizeGreaterThan: aws.Int64(100)}},
		}}}); err != nil {
		t.Fatalf("Prefix and Tag without And: %v", err)
	}
	got, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: b})
	if err != nil || len(got.Rules) != 2 {
		t.Fatalf("GetBucketLifecycleConfiguration: %+v %v", got, err)
	}
	r := got.Rules[0]
	id := aws.ToString(r.ID)
	if len(id) != 48 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		t.Fatalf("generated rule ID %q", id)
	}
	if r.Filter == nil || r.Filter.And == nil || aws.ToString(r.Filter.And.Prefix) != "logs/" || len(r.Filter.And.Tags) != 1 ||
		aws.ToString(r.Filter.And.Tags[0].Key) != "k" || r.Filter.Prefix != nil || r.Filter.Tag != nil {
		t.Fatalf("filter returned %+v", r.Filter)
	}

	// The header AWS sends: expiry-date="<HTTP date>", rule-id="<id>".
	want := func(mod time.Time, days int, rule string) string {
		due := mod.UTC().Add(time.Duration(days) * 24 * time.Hour)
		if m := due.Truncate(24 * time.Hour); m.Before(due) {
			due = m.Add(24 * time.Hour)
		}
		return `expiry-date="` + due.Format(http.TimeFormat) + `", rule-id="` + rule + `"`
	}
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("logs/a"), Body: strings.NewReader("x"), Tagging: aws.String("k=v")})
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("logs/a")})
	if err != nil {
		t.Fatal(err)
	}
	exp := want(*head.LastModified, 3, id)
	if aws.ToString(put.Expiration) != exp || aws.ToString(head.Expiration) != exp {
		t.Fatalf("x-amz-expiration: PUT %q, HEAD %q, want %q", aws.ToString(put.Expiration), aws.ToString(head.Expiration), exp)
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("logs/a")})
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if aws.ToString(get.Expiration) != exp {
		t.Fatalf("GET x-amz-expiration %q, want %q", aws.ToString(get.Expiration), exp)
	}
	// No tag: the first rule does not match; small: nor does the second.
	put, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("logs/b"), Body: strings.NewReader("x")})
	if err != nil || put.Expiration != nil {
		t.Fatalf("untagged object: %v %v", aws.ToString(put.Expiration), err)
	}
	// Both rules match: the earlier expiry wins.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("logs/c"), Body: strings.NewReader(strings.Repeat("x", 200)), Tagging: aws.String("k=v")}); err != nil {
		t.Fatal(err)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("logs/c")})
	if err != nil || aws.ToString(head.Expiration) != want(*head.LastModified, 3, id) {
		t.Fatalf("two rules: %q %v", aws.ToString(head.Expiration), err)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("logs/b")})
	if err != nil || head.Expiration != nil {
		t.Fatalf("HEAD of an object no rule expires: %q %v", aws.ToString(head.Expiration), err)
	}
}

// Buckets (AWS CreateBucket: "if you re-create an existing bucket that
// you already own in the North Virginia Region, Amazon S3 returns 200 OK",
// BucketAlreadyOwnedByYou in other regions; RGW answers BucketAlreadyExists
// when the request asks for another bucket; DeleteBucket aborts the
// incomplete uploads of an otherwise empty bucket, as RGW does).
func TestConformBuckets(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("recreate")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	out, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b})
	if err != nil || aws.ToString(out.Location) != "/recreate" {
		t.Fatalf("owner's re-create in the default region: %+v %v", out, err)
	}
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b, ACL: types.BucketCannedACLPublicRead})
	wantErr(t, "re-create with another ACL", err, 409, "BucketAlreadyExists")
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b, ObjectLockEnabledForBucket: aws.Bool(true)})
	wantErr(t, "re-create with object lock", err, 409, "BucketAlreadyExists")
	if acl, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: b}); err != nil || len(acl.Grants) != 1 {
		t.Fatalf("a refused re-create changed the ACL: %+v %v", acl, err)
	}
	if _, err := g.Admin("user", "create", "--uid", "other", "--display-name", "Other", "--access-key", "OTHERKEY", "--secret", "othersecret123"); err != nil {
		t.Fatal(err)
	}
	_, err = sdkClient(g, "OTHERKEY", "othersecret123").CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b})
	wantErr(t, "another owner's bucket", err, 409, "BucketAlreadyExists")

	// DeleteBucket: an object keeps the bucket (and its upload); incomplete
	// uploads alone are aborted with it.
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: cu.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("part")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("obj"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b})
	wantErr(t, "bucket with an object", err, 409, "BucketNotEmpty")
	if ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b}); err != nil || len(ups.Uploads) != 1 {
		t.Fatalf("the refused delete touched the upload: %+v %v", ups, err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("obj")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); err != nil {
		t.Fatalf("bucket with only an incomplete upload: %v", err)
	}
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b})
	wantErr(t, "deleted bucket", err, 404, "NotFound")
	// Re-created, it has no upload left.
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b}); err != nil || len(ups.Uploads) != 0 {
		t.Fatalf("uploads of the deleted bucket: %+v %v", ups, err)
	}

	// Another region: AWS's BucketAlreadyOwnedByYou.
	eu := StartGateway(t, "--region", "eu-west-1")
	ce := sdkClient(eu, eu.AccessKey, eu.SecretKey)
	ce2 := s3.New(ce.Options(), func(o *s3.Options) { o.Region = "eu-west-1" })
	mk := &s3.CreateBucketInput{Bucket: b, CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: "eu-west-1"}}
	if _, err := ce2.CreateBucket(ctx, mk); err != nil {
		t.Fatal(err)
	}
	_, err = ce2.CreateBucket(ctx, mk)
	wantErr(t, "owner's re-create in eu-west-1", err, 409, "BucketAlreadyOwnedByYou")
}

// x-amz-expected-bucket-owner (AWS: 403 AccessDenied when the bucket has
// another owner, on every bucket and object operation; the source's on
// copies), anonymous ListBuckets (RGW: an empty list) and
// GetBucketPolicyStatus without a policy (RGW: 200, public per the ACL).
func TestConformBucketOwnerAndStatus(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("owned")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	acl, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: b})
	if err != nil {
		t.Fatal(err)
	}
	me, other := aws.ToString(acl.Owner.ID), aws.String("someone-else")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("x"), ExpectedBucketOwner: aws.String(me)}); err != nil {
		t.Fatalf("PutObject, right owner: %v", err)
	}
	for name, call := range map[string]func() error{
		"PutObject": func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k2"), Body: strings.NewReader("x"), ExpectedBucketOwner: other})
			return err
		},
		"GetObject": func() error {
			_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("k"), ExpectedBucketOwner: other})
			return err
		},
		"ListObjectsV2": func() error {
			_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, ExpectedBucketOwner: other})
			return err
		},
		"GetBucketVersioning": func() error {
			_, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b, ExpectedBucketOwner: other})
			return err
		},
		"DeleteObject": func() error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k"), ExpectedBucketOwner: other})
			return err
		},
		"DeleteBucket": func() error {
			_, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b, ExpectedBucketOwner: other})
			return err
		},
		"CopyObject source": func() error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("k3"), CopySource: aws.String("owned/k"), ExpectedSourceBucketOwner: other})
			return err
		},
	} {
		wantErr(t, name+" with another expected owner", call(), 403, "AccessDenied")
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("k")}); err != nil {
		t.Fatalf("refused DeleteObject deleted: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("k3"), CopySource: aws.String("owned/k"),
		ExpectedBucketOwner: aws.String(me), ExpectedSourceBucketOwner: aws.String(me)}); err != nil {
		t.Fatalf("CopyObject, right owners: %v", err)
	}

	anon := s3.New(s3.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	lb, err := anon.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 0 {
		t.Fatalf("anonymous ListBuckets: %+v %v", lb, err)
	}

	st, err := c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: b})
	if err != nil || aws.ToBool(st.PolicyStatus.IsPublic) {
		t.Fatalf("GetBucketPolicyStatus, private, no policy: %+v %v", st, err)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	st, err = c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: b})
	if err != nil || !aws.ToBool(st.PolicyStatus.IsPublic) {
		t.Fatalf("GetBucketPolicyStatus, public-read ACL: %+v %v", st, err)
	}

	// Policies and ownership (AWS): BucketOwnerEnforced is refused while
	// the bucket ACL grants others anything; NotPrincipal only with Deny.
	enforce := &s3.PutBucketOwnershipControlsInput{Bucket: b, OwnershipControls: &types.OwnershipControls{
		Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}}}}
	_, err = c.PutBucketOwnershipControls(ctx, enforce)
	wantErr(t, "BucketOwnerEnforced over a public ACL", err, 400, "InvalidBucketAclWithObjectOwnership")
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: types.BucketCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketOwnershipControls(ctx, enforce); err != nil {
		t.Fatalf("BucketOwnerEnforced over a private ACL: %v", err)
	}
	_, err = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow",` +
		`"NotPrincipal":{"AWS":"arn:aws:iam:::user/x"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::owned/*"}]}`)})
	wantErr(t, "NotPrincipal with Allow", err, 400, "MalformedPolicy")
}

// Listing (AWS ListObjectsV2 with encoding-type=url: Delimiter, Prefix,
// Key and StartAfter come back URL-encoded; ListObjects v1 returns Prefix
// as sent, as RGW does; an empty continuation token is no token).
func TestConformListing(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("listing")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a b+c", "a b+d/e", "z"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	v2, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("a b"), Delimiter: aws.String("+"),
		EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(v2.Prefix) != "a%20b" || aws.ToString(v2.Delimiter) != "%2B" || len(v2.CommonPrefixes) != 1 ||
		aws.ToString(v2.CommonPrefixes[0].Prefix) != "a%20b%2B" {
		t.Fatalf("v2 encoded: prefix %q delimiter %q prefixes %d", aws.ToString(v2.Prefix), aws.ToString(v2.Delimiter), len(v2.CommonPrefixes))
	}
	v1, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: b, Prefix: aws.String("a b"), Delimiter: aws.String("+"),
		EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(v1.Prefix) != "a b" || aws.ToString(v1.Delimiter) != "%2B" || len(v1.CommonPrefixes) != 1 ||
		aws.ToString(v1.CommonPrefixes[0].Prefix) != "a%20b%2B" {
		t.Fatalf("v1: prefix %q delimiter %q prefixes %d", aws.ToString(v1.Prefix), aws.ToString(v1.Delimiter), len(v1.CommonPrefixes))
	}
	empty, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, ContinuationToken: aws.String(""), MaxKeys: aws.Int32(1)})
	if err != nil || len(empty.Contents) != 1 || aws.ToString(empty.Contents[0].Key) != "a b+c" {
		t.Fatalf("empty continuation token: %+v %v", empty, err)
	}
}

// Multipart (AWS ListMultipartUploads / ListParts: Initiator is who
// started the upload, Owner the object's owner to be; a duplicate part
// number in Complete is InvalidPartOrder), and DisplayName in ACLs.
func TestConformMultipartInitiator(t *testing.T) {
	g := StartGateway(t)
	alice := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := g.Admin("user", "create", "--uid", "bob", "--display-name", "Bob", "--access-key", "BOBKEY", "--secret", "bobsecret123"); err != nil {
		t.Fatal(err)
	}
	bob := sdkClient(g, "BOBKEY", "bobsecret123")
	b := aws.String("mpowners")
	if _, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},` +
		`"Action":["s3:PutObject","s3:ListMultipartUploadParts"],"Resource":"arn:aws:s3:::mpowners/*"}]}`
	if _, err := alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	// ACL documents: CanonicalUser grantees carry DisplayName (AWS, RGW),
	// canned ACLs included; groups listed first (RGW).
	if _, err := alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: types.BucketCannedACLAuthenticatedRead}); err != nil {
		t.Fatal(err)
	}
	acl, err := alice.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: b})
	if err != nil || len(acl.Grants) != 2 || aws.ToString(acl.Owner.DisplayName) == "" ||
		acl.Grants[1].Grantee.Type != types.TypeCanonicalUser || aws.ToString(acl.Grants[1].Grantee.DisplayName) != aws.ToString(acl.Owner.DisplayName) ||
		acl.Grants[0].Grantee.Type != types.TypeGroup {
		t.Fatalf("GetBucketAcl: %+v %v", acl, err)
	}
	cu, err := bob.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("bobs")})
	if err != nil {
		t.Fatal(err)
	}
	ups, err := alice.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
	if err != nil || len(ups.Uploads) != 1 {
		t.Fatalf("ListMultipartUploads: %+v %v", ups, err)
	}
	u := ups.Uploads[0]
	if aws.ToString(u.Initiator.ID) != "bob" || aws.ToString(u.Initiator.DisplayName) != "Bob" || aws.ToString(u.Owner.ID) != "bob" {
		t.Fatalf("upload initiator %+v owner %+v", *u.Initiator, *u.Owner)
	}
	lp, err := bob.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: aws.String("bobs"), UploadId: cu.UploadId})
	if err != nil || aws.ToString(lp.Initiator.ID) != "bob" || aws.ToString(lp.Owner.ID) != "bob" {
		t.Fatalf("ListParts: %+v %v", lp, err)
	}
	p, err := bob.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("bobs"), UploadId: cu.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bob.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("bobs"), UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}, {PartNumber: aws.Int32(1), ETag: p.ETag}}}})
	wantErr(t, "duplicate part number", err, 400, "InvalidPartOrder")
}

// UTF-8 user metadata round-trips as AWS returns it: RFC 2047 (=?UTF-8?B?)
// when the value is not ASCII, unchanged when it is.
func TestConformUTF8Metadata(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("utf8meta")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": "héllo wörld ✓", "plain": "ascii only"}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("x"), Metadata: want}); err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	enc := h.Metadata["name"]
	if !strings.HasPrefix(enc, "=?UTF-8?b?") && !strings.HasPrefix(enc, "=?UTF-8?B?") {
		t.Fatalf("non-ASCII value sent as %q, want RFC 2047", enc)
	}
	dec, err := new(mime.WordDecoder).DecodeHeader(enc)
	if err != nil || dec != want["name"] {
		t.Fatalf("decoded %q %v, want %q", dec, err, want["name"])
	}
	if h.Metadata["plain"] != want["plain"] {
		t.Fatalf("ASCII value %q", h.Metadata["plain"])
	}
}

// RGW's notification dialect: a TopicConfiguration whose Id is sent empty
// is refused (400 InvalidArgument), before its topic is looked at.
func TestConformNotificationEmptyID(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("emptyid")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: b,
		NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
			Id: aws.String(""), TopicArn: aws.String("arn:aws:sns:default::t"), Events: []types.Event{"s3:ObjectCreated:*"}}}}})
	wantErr(t, "empty notification Id", err, 400, "InvalidArgument")
}

// ACL grant order (RGW lists group grants first, then users by id, each
// grantee's grants in the order given; s3-tests checks the order exactly),
// and email grantees (AWS: AmazonCustomerByEmail resolves to the user with
// that address, listed as a CanonicalUser; an unknown address is 400
// UnresolvableGrantByEmailAddress).
func TestConformACLGrantOrder(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	for _, u := range [][]string{{"aaa-first", "Aaa", "aaa@example.com"}, {"zzz-last", "Zzz", "zzz@example.com"}} {
		if _, err := g.Admin("user", "create", "--uid", u[0], "--display-name", u[1], "--email", u[2]); err != nil {
			t.Fatal(err)
		}
	}
	b := aws.String("aclorder")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b, ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
		t.Fatal(err)
	}
	type grant struct{ typ, who, perm string }
	list := func() []grant {
		t.Helper()
		acl, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: b})
		if err != nil {
			t.Fatal(err)
		}
		var out []grant
		for _, gr := range acl.Grants {
			who := aws.ToString(gr.Grantee.ID) + aws.ToString(gr.Grantee.URI) + aws.ToString(gr.Grantee.EmailAddress)
			out = append(out, grant{string(gr.Grantee.Type), who, string(gr.Permission)})
		}
		return out
	}
	acl, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: b})
	if err != nil {
		t.Fatal(err)
	}
	me := aws.ToString(acl.Owner.ID)
	if !(me > "aaa-first" && me < "zzz-last") {
		t.Fatalf("the test assumes the owner id %q sorts between its users", me)
	}
	const all = "http://acs.amazonaws.com/groups/global/AllUsers"
	want := []grant{{"Group", all, "READ"}, {"Group", all, "WRITE"}, {"CanonicalUser", me, "FULL_CONTROL"}}
	if got := list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("public-read-write grants:\n got %v\nwant %v", got, want)
	}

	// An AccessControlPolicy listing the owner first, a user, a group and
	// an email grantee.
	user := func(id string) *types.Grantee {
		return &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String(id)}
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, AccessControlPolicy: &types.AccessControlPolicy{
		Owner: &types.Owner{ID: aws.String(me)},
		Grants: []types.Grant{
			{Grantee: user(me), Permission: types.PermissionFullControl},
			{Grantee: user("zzz-last"), Permission: types.PermissionWrite},
			{Grantee: user("zzz-last"), Permission: types.PermissionRead},
			{Grantee: &types.Grantee{Type: types.TypeGroup, URI: aws.String(all)}, Permission: types.PermissionRead},
			{Grantee: &types.Grantee{Type: types.TypeAmazonCustomerByEmail, EmailAddress: aws.String("AAA@example.com")}, Permission: types.PermissionReadAcp},
		}}}); err != nil {
		t.Fatal(err)
	}
	want = []grant{{"Group", all, "READ"}, {"CanonicalUser", "aaa-first", "READ_ACP"}, {"CanonicalUser", me, "FULL_CONTROL"},
		{"CanonicalUser", "zzz-last", "WRITE"}, {"CanonicalUser", "zzz-last", "READ"}}
	if got := list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("AccessControlPolicy grants:\n got %v\nwant %v", got, want)
	}

	// x-amz-grant-* headers: each header's grantees in order, headers in
	// READ, WRITE, READ_ACP, WRITE_ACP, FULL_CONTROL order.
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, GrantFullControl: aws.String(`id="` + me + `"`),
		GrantRead: aws.String(`id="zzz-last", emailAddress="aaa@example.com", uri="` + all + `"`), GrantWriteACP: aws.String(`id="zzz-last"`)}); err != nil {
		t.Fatal(err)
	}
	want = []grant{{"Group", all, "READ"}, {"CanonicalUser", "aaa-first", "READ"}, {"CanonicalUser", me, "FULL_CONTROL"},
		{"CanonicalUser", "zzz-last", "READ"}, {"CanonicalUser", "zzz-last", "WRITE_ACP"}}
	if got := list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("x-amz-grant-* grants:\n got %v\nwant %v", got, want)
	}

	_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, GrantRead: aws.String(`emailAddress="nobody@example.com"`)})
	wantErr(t, "grant to an unknown email", err, 400, "UnresolvableGrantByEmailAddress")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("x"),
		GrantRead: aws.String(`emailAddress="nobody@example.com"`)})
	wantErr(t, "object grant to an unknown email", err, 400, "UnresolvableGrantByEmailAddress")
}

// GET and HEAD with partNumber and ChecksumMode ENABLED answer the part's
// checksum (AWS ObjectPart/GetObject: part-level checksums of multipart
// uploads, the default CRC64NVME included) with the object's checksum
// type; the SDK validates the part's bytes against it. Part 1 of a
// single-part object is the whole object, with its checksum.
func TestConformPartChecksums(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	plain := s3.New(c.Options(), func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired })
	ctx := context.Background()
	b := aws.String("partsums")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	data := randomData(t, 5*mib+1000)
	chunks := [][]byte{data[:5*mib], data[5*mib:]}
	upload := func(cl *s3.Client, k string, alg types.ChecksumAlgorithm) []string {
		t.Helper()
		cu, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String(k), ChecksumAlgorithm: alg})
		if err != nil {
			t.Fatal(err)
		}
		var parts []types.CompletedPart
		var sums []string
		for i, chunk := range chunks {
			up, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String(k), UploadId: cu.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(chunk), ChecksumAlgorithm: alg})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag, ChecksumCRC32: up.ChecksumCRC32})
			sums = append(sums, aws.ToString(up.ChecksumCRC32))
		}
		if _, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String(k), UploadId: cu.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
			t.Fatal(err)
		}
		return sums
	}

	// COMPOSITE CRC32: each part's own CRC32.
	sums := upload(c, "composite", types.ChecksumAlgorithmCrc32)
	for i := range chunks {
		n := aws.Int32(int32(i + 1))
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("composite"), PartNumber: n, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(get.Body) // validated by the SDK
		get.Body.Close()
		if err != nil || !bytes.Equal(body, chunks[i]) || aws.ToString(get.ChecksumCRC32) != sums[i] ||
			get.ChecksumType != types.ChecksumTypeComposite || aws.ToInt32(get.PartsCount) != 2 {
			t.Fatalf("GET part %d: %v crc32 %q type %q parts %d, want %q COMPOSITE 2", i+1, err, aws.ToString(get.ChecksumCRC32), get.ChecksumType, aws.ToInt32(get.PartsCount), sums[i])
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("composite"), PartNumber: n, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil || aws.ToString(head.ChecksumCRC32) != sums[i] || head.ChecksumType != types.ChecksumTypeComposite {
			t.Fatalf("HEAD part %d: %v %q %q", i+1, err, aws.ToString(head.ChecksumCRC32), head.ChecksumType)
		}
	}
	// Without ChecksumMode, no checksum.
	if head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("composite"), PartNumber: aws.Int32(1)}); err != nil || head.ChecksumCRC32 != nil {
		t.Fatalf("HEAD part without checksum mode: %v %q", err, aws.ToString(head.ChecksumCRC32))
	}

	// Uploaded without checksums: the default CRC64NVME of each part.
	upload(plain, "default", "")
	for i := range chunks {
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("default"), PartNumber: aws.Int32(int32(i + 1)), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil || aws.ToString(head.ChecksumCRC64NVME) != crc64NVME(chunks[i]) || head.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("HEAD default part %d: %v %q %q, want %q", i+1, err, aws.ToString(head.ChecksumCRC64NVME), head.ChecksumType, crc64NVME(chunks[i]))
		}
	}

	// A single-part object: part 1 is the object.
	if _, err := plain.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("single"), Body: bytes.NewReader(chunks[1])}); err != nil {
		t.Fatal(err)
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("single"), PartNumber: aws.Int32(1), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(get.Body)
	get.Body.Close()
	if err != nil || !bytes.Equal(body, chunks[1]) || aws.ToString(get.ChecksumCRC64NVME) != crc64NVME(chunks[1]) || get.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("GET part 1 of a single-part object: %v %q %q", err, aws.ToString(get.ChecksumCRC64NVME), get.ChecksumType)
	}
}

// Bucket policies and object ownership: a statement whose only action
// needs an object ARN but names only the bucket is MalformedPolicy ("Action
// does not apply to any resource(s) in statement", AWS); beside an action
// that fits, s3:PutObject on the bucket ARN is accepted and never matches
// an object. The bucket owner reads the ACL of an object another user
// wrote (ObjectWriter ownership) only when that ACL grants it (AWS: the
// object owner controls its ACL).
func TestConformPolicyResourcesAndObjectACLOwner(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	for _, u := range []string{"alice", "bob"} {
		if _, err := g.Admin("user", "create", "--uid", u, "--display-name", u, "--access-key", strings.ToUpper(u)+"KEY", "--secret", u+"secret123"); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := sdkClient(g, "ALICEKEY", "alicesecret123"), sdkClient(g, "BOBKEY", "bobsecret123")
	b := aws.String("owners")
	if _, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	stmt := func(actions string) *string {
		return aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},` +
			`"Action":` + actions + `,"Resource":"arn:aws:s3:::owners"}]}`)
	}
	_, err := alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: stmt(`"s3:PutObject"`)})
	wantErr(t, "object action on the bucket ARN alone", err, 400, "MalformedPolicy")
	if _, err := alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: stmt(`["s3:PutObject","s3:ListBucket"]`)}); err != nil {
		t.Fatalf("object action beside a bucket action on the bucket ARN: %v", err)
	}
	if _, err := bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b}); err != nil {
		t.Fatalf("ListBucket granted on the bucket ARN: %v", err)
	}
	_, err = bob.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("x")})
	wantErr(t, "PutObject matched by a bucket ARN", err, 403, "AccessDenied")

	// Bob writes an object (granted on bucket/*); alice owns the bucket, not it.
	if _, err := alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String(`{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::owners/*"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bobs"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	_, err = alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("bobs")})
	wantErr(t, "bucket owner reading the ACL of bob's object", err, 403, "AccessDenied")
	_, err = alice.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("bobs")})
	wantErr(t, "bucket owner reading bob's object", err, 403, "AccessDenied")
	// bucket-owner-read grants READ, not READ_ACP; bucket-owner-full-control both.
	if _, err := bob.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bobs"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLBucketOwnerRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("bobs")}); err != nil {
		t.Fatalf("bucket-owner-read: %v", err)
	}
	_, err = alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("bobs")})
	wantErr(t, "bucket-owner-read, ACL", err, 403, "AccessDenied")
	if _, err := bob.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bobs"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLBucketOwnerFullControl}); err != nil {
		t.Fatal(err)
	}
	acl, err := alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("bobs")})
	if err != nil || aws.ToString(acl.Owner.ID) != "bob" {
		t.Fatalf("bucket-owner-full-control, ACL: %+v %v", acl, err)
	}
}

// GetObjectTorrent as RGW answers it with torrents off (its default): no
// object has a torrent, so an existing object is 404 NoSuchKey; a missing
// one NoSuchKey too; another user without a grant AccessDenied.
func TestConformObjectTorrent(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("torrents")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("data")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetObjectTorrent(ctx, &s3.GetObjectTorrentInput{Bucket: b, Key: aws.String("k")})
	wantErr(t, "torrent of an object", err, 404, "NoSuchKey")
	_, err = c.GetObjectTorrent(ctx, &s3.GetObjectTorrentInput{Bucket: b, Key: aws.String("missing")})
	wantErr(t, "torrent of a missing object", err, 404, "NoSuchKey")
	if _, err := g.Admin("user", "create", "--uid", "eve", "--display-name", "Eve", "--access-key", "EVEKEY", "--secret", "evesecret123"); err != nil {
		t.Fatal(err)
	}
	_, err = sdkClient(g, "EVEKEY", "evesecret123").GetObjectTorrent(ctx, &s3.GetObjectTorrentInput{Bucket: b, Key: aws.String("k")})
	wantErr(t, "torrent without a grant", err, 403, "AccessDenied")
}

// Lifecycle expiration events under RGW's two names (rgw_lc.cc sends each
// expiration under its ObjectLifecycle:Expiration:* type and the legacy
// LifecycleExpiration:* one; every configuration gets a record for each
// type it selects): current version → Current and LifecycleExpiration:Delete
// (with the object's size), noncurrent → LifecycleExpiration:Delete and
// NonCurrent, expired delete marker → DeleteMarker and
// LifecycleExpiration:DeleteMarkerCreated (size 0: a marker has no data).
func TestConformLifecycleEventNames(t *testing.T) {
	rv := newReceiver(t)
	g := StartGateway(t, "--lc-debug-interval", "2s", "--notif-scan-interval", "1s")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "lcnames")
	awsCLI(t, g, "s3api", "put-bucket-versioning", "--bucket", "lcnames", "--versioning-configuration", "Status=Enabled")
	out := awsCLI(t, g, "sns", "create-topic", "--name=lcnames",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	arn := jsonField(t, out, "TopicArn")
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "lcnames",
		`--notification-configuration={"TopicConfigurations": [`+
			`{"Id": "new", "TopicArn": "`+arn+`", "Events": ["s3:ObjectLifecycle:Expiration:*"]},`+
			`{"Id": "legacy", "TopicArn": "`+arn+`", "Events": ["s3:LifecycleExpiration:*"]},`+
			`{"Id": "both", "TopicArn": "`+arn+`", "Events": ["s3:ObjectLifecycle:Expiration:Current", "s3:LifecycleExpiration:Delete"]}]}`)
	sdkPut(t, c, "lcnames", "k", "old")
	sdkPut(t, c, "lcnames", "k", "current!")
	awsCLI(t, g, "s3api", "put-bucket-lifecycle-configuration", "--bucket", "lcnames", "--lifecycle-configuration",
		`{"Rules": [{"ID": "all", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]}`)
	deadline := time.Now().Add(2 * time.Minute)
	for len(versionsOf(t, c, "lcnames")) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("versions left: %v", versionsOf(t, c, "lcnames"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := map[string]int{
		"new ObjectLifecycle:Expiration:Current 8": 1, "new ObjectLifecycle:Expiration:NonCurrent 3": 1,
		"new ObjectLifecycle:Expiration:NonCurrent 8": 1, "new ObjectLifecycle:Expiration:DeleteMarker 0": 1,
		"legacy LifecycleExpiration:Delete 8": 2, "legacy LifecycleExpiration:Delete 3": 1,
		"legacy LifecycleExpiration:DeleteMarkerCreated 0": 1,
		"both ObjectLifecycle:Expiration:Current 8":        1, "both LifecycleExpiration:Delete 8": 2, "both LifecycleExpiration:Delete 3": 1,
	}
	total := 0
	for _, n := range want {
		total += n
	}
	deadline = time.Now().Add(time.Minute)
	for len(rv.snapshot()) < total && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	waitPasses(t, g, "lcnames", 1) // late extras would have arrived by now
	got := map[string]int{}
	for _, r := range rv.snapshot() {
		got[fmt.Sprintf("%v %v %v", field(r, "s3", "configurationId"), r["eventName"], field(r, "s3", "object", "size"))]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records (configuration, eventName, size):\n got %v\nwant %v", got, want)
	}
}

// cairn admin topic get/list print subscribed_buckets, the buckets whose
// notifications name the topic, as radosgw-admin does.
func TestConformAdminTopicSubscribedBuckets(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	arn := jsonField(t, awsCLI(t, g, "sns", "create-topic", "--name=subs"), "TopicArn")
	for _, b := range []string{"subs-b", "subs-a", "subs-none"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"subs-b", "subs-a"} {
		if _, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String(b),
			NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{
				{Id: aws.String("one"), TopicArn: aws.String(arn), Events: []types.Event{"s3:ObjectCreated:*"}},
				{Id: aws.String("two"), TopicArn: aws.String(arn), Events: []types.Event{"s3:ObjectRemoved:*"}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	subs := func(args ...string) string {
		t.Helper()
		out, err := g.Admin(args...)
		if err != nil {
			t.Fatalf("admin %v: %s %v", args, out, err)
		}
		var doc struct {
			SubscribedBuckets []string `json:"subscribed_buckets"`
			Topics            []struct {
				Name              string   `json:"name"`
				SubscribedBuckets []string `json:"subscribed_buckets"`
			} `json:"topics"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("admin %v: %v\n%s", args, err, out)
		}
		if len(doc.Topics) > 0 {
			return fmt.Sprint(doc.Topics[0].Name, doc.Topics[0].SubscribedBuckets)
		}
		return fmt.Sprint(doc.SubscribedBuckets)
	}
	if got := subs("topic", "get", "--topic", "subs"); got != "[subs-a subs-b]" {
		t.Fatalf("topic get: %s", got)
	}
	if got := subs("topic", "list"); got != "subs[subs-a subs-b]" {
		t.Fatalf("topic list: %s", got)
	}
	if _, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String("subs-b"),
		NotificationConfiguration: &types.NotificationConfiguration{}}); err != nil {
		t.Fatal(err)
	}
	if got := subs("topic", "get", "--topic", "subs"); got != "[subs-a]" {
		t.Fatalf("topic get after subs-b dropped its notifications: %s", got)
	}
}

// GetObject and HeadObject with both Range and partNumber are 400
// InvalidRequest (AWS GetObject: "Cannot specify both Range header and
// partNumber query parameter").
func TestConformRangeWithPartNumber(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b, k := aws.String("validation"), aws.String("k")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("hello")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(1), Range: aws.String("bytes=0-1")})
	wantErr(t, "Range with partNumber", err, 400, "InvalidRequest")
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(1), Range: aws.String("bytes=0-1")})
	if httpStatus(err) != 400 {
		t.Fatalf("HEAD with Range and partNumber: %v", err)
	}
}
