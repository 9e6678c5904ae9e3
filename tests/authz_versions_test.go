package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The probe cases of issue 19 (items 1, 2 and 9) against a real `cairn
// serve` with aws-sdk-go-v2: alice owns a versioned bucket, bob has his
// own bucket and a policy on hers, anonymous reads what is public. Every
// refusal is checked for what it left behind, not only for its status.

// httpStatus is the HTTP status of an SDK error (HEAD errors have no code).
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func TestVersionAuthzProbe(t *testing.T) { versionAuthzProbe(t, StartGateway(t)) }

// versionAuthzProbe runs the probe on g (the embedded backend here, RADOS
// in ceph_authz_test.go: the index class code is shared).
func versionAuthzProbe(t *testing.T, g *Gateway) {
	ctx := context.Background()
	a, b := createUser(t, g, "alice"), createUser(t, g, "bob")
	alice, bob := sdkClient(g, a.ak, a.sk), sdkClient(g, b.ak, b.sk)
	anon := s3.New(s3.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	denied := func(err error, what string) {
		t.Helper()
		if httpStatus(err) != 403 || (apiCode(err) != "" && apiCode(err) != "AccessDenied") {
			t.Errorf("%s: %v, want 403 AccessDenied", what, err)
		}
	}
	const src, dst = "probe-src", "probe-bob"
	_, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(src)})
	must(err, "CreateBucket src")
	_, err = alice.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(src),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
	must(err, "PutBucketVersioning")
	_, err = bob.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(dst)})
	must(err, "CreateBucket dst")
	putV := func(key, body string) string {
		t.Helper()
		out, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(src), Key: aws.String(key), Body: strings.NewReader(body)})
		must(err, "PutObject "+key)
		return aws.ToString(out.VersionId)
	}
	old := putV("k", "old-secret")
	cur := putV("k", "new-data")
	policy := func(statements ...string) {
		t.Helper()
		_, err := alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(src),
			Policy: aws.String(`{"Version":"2012-10-17","Statement":[` + strings.Join(statements, ",") + `]}`)})
		must(err, "PutBucketPolicy")
	}
	stmt := func(effect, principal, resource string, actions ...string) string {
		return fmt.Sprintf(`{"Effect":%q,"Principal":%s,"Action":["%s"],"Resource":"arn:aws:s3:::%s"}`,
			effect, principal, strings.Join(actions, `","`), resource)
	}
	const bobP, anyone = `{"AWS":"bob"}`, `"*"`
	read := func(c *s3.Client, bucket, key, vid string) (string, error) {
		in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
		if vid != "" {
			in.VersionId = aws.String(vid)
		}
		out, err := c.GetObject(ctx, in)
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		data, err := io.ReadAll(out.Body)
		return string(data), err
	}
	dstKeys := func() []string {
		t.Helper()
		out, err := bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(dst)})
		must(err, "ListObjectsV2 dst")
		var keys []string
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		return keys
	}
	copyOld := func(what, to string) {
		t.Helper()
		_, err := bob.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(dst), Key: aws.String(to),
			CopySource: aws.String(src + "/k?versionId=" + old)})
		denied(err, what+": CopyObject of the noncurrent version")
		up, err := bob.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(dst), Key: aws.String(to + "-mp")})
		must(err, "CreateMultipartUpload")
		_, err = bob.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(dst), Key: aws.String(to + "-mp"),
			UploadId: up.UploadId, PartNumber: aws.Int32(1), CopySource: aws.String(src + "/k?versionId=" + old)})
		denied(err, what+": UploadPartCopy of the noncurrent version")
		parts, err := bob.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(dst), Key: aws.String(to + "-mp"), UploadId: up.UploadId})
		must(err, "ListParts")
		if len(parts.Parts) != 0 {
			t.Errorf("%s: a refused UploadPartCopy stored %d parts", what, len(parts.Parts))
		}
		_, err = bob.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(dst), Key: aws.String(to + "-mp"), UploadId: up.UploadId})
		must(err, "AbortMultipartUpload")
		if keys := dstKeys(); len(keys) != 0 {
			t.Errorf("%s: refused copies wrote %v", what, keys)
		}
	}

	// 1. Copy sources: GetObject alone does not reach a noncurrent version;
	// neither does s3:* under an explicit Deny of GetObjectVersion.
	policy(stmt("Allow", bobP, src+"/*", "s3:GetObject"))
	copyOld("GetObject only", "stolen")
	policy(stmt("Allow", bobP, src+"/*", "s3:*"), stmt("Deny", bobP, src+"/*", "s3:GetObjectVersion"))
	copyOld("Deny GetObjectVersion", "stolen2")
	// The current version, which s3:GetObject covers, still copies.
	_, err = bob.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(dst), Key: aws.String("current"), CopySource: aws.String(src + "/k")})
	must(err, "CopyObject of the current version")
	if got, err := read(bob, dst, "current", ""); err != nil || got != "new-data" {
		t.Errorf("copy of the current version: %q %v", got, err)
	}

	// Tagging of a version under Deny *ObjectVersionTagging.
	_, err = alice.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(old),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}}})
	must(err, "PutObjectTagging by the owner")
	policy(stmt("Allow", bobP, src+"/*", "s3:*"),
		stmt("Deny", bobP, src+"/*", "s3:GetObjectVersionTagging", "s3:PutObjectVersionTagging", "s3:DeleteObjectVersionTagging"))
	bobTags := &types.Tagging{TagSet: []types.Tag{{Key: aws.String("b"), Value: aws.String("2")}}}
	_, err = bob.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(old), Tagging: bobTags})
	denied(err, "PutObjectTagging of a version under Deny")
	_, err = bob.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(old)})
	denied(err, "DeleteObjectTagging of a version under Deny")
	_, err = bob.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(old)})
	denied(err, "GetObjectTagging of a version under Deny")
	tags, err := alice.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(old)})
	must(err, "GetObjectTagging by the owner")
	if len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Key) != "a" {
		t.Errorf("the version's tags changed under a Deny: %+v", tags.TagSet)
	}
	_, err = bob.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(src), Key: aws.String("k"), Tagging: bobTags})
	must(err, "PutObjectTagging of the current version (allowed)")

	// 2. Each version has its own ACL.
	_, err = alice.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(src)})
	must(err, "DeleteBucketPolicy")
	_, err = alice.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(src), Key: aws.String("k"), ACL: types.ObjectCannedACLPublicRead})
	must(err, "PutObjectAcl public-read on the current version")
	if got, err := read(anon, src, "k", ""); err != nil || got != "new-data" {
		t.Errorf("anonymous GET of the public current version: %q %v", got, err)
	}
	got, err := read(anon, src, "k", old)
	denied(err, "anonymous GET ?versionId=old after the current was made public")
	if got != "" {
		t.Errorf("old data leaked: %q", got)
	}
	_, err = bob.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(dst), Key: aws.String("stolen3"), CopySource: aws.String(src + "/k?versionId=" + old)})
	denied(err, "bob copies the private old version after the current was made public")
	isPublic := func(vid string) bool {
		t.Helper()
		out, err := alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(vid)})
		must(err, "GetObjectAcl "+vid)
		for _, g := range out.Grants {
			if g.Grantee != nil && strings.HasSuffix(aws.ToString(g.Grantee.URI), "/global/AllUsers") {
				return true
			}
		}
		return false
	}
	if !isPublic(cur) || isPublic(old) {
		t.Errorf("after PutObjectAcl on the current version: current public %v, old public %v", isPublic(cur), isPublic(old))
	}
	// PutObjectAcl ?versionId works and changes only that version.
	_, err = alice.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(old), ACL: types.ObjectCannedACLPublicRead})
	must(err, "PutObjectAcl ?versionId=old")
	_, err = alice.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(src), Key: aws.String("k"), VersionId: aws.String(cur), ACL: types.ObjectCannedACLPrivate})
	must(err, "PutObjectAcl ?versionId=current private")
	if !isPublic(old) || isPublic(cur) {
		t.Errorf("after PutObjectAcl by id: old public %v, current public %v", isPublic(old), isPublic(cur))
	}
	if got, err := read(anon, src, "k", old); err != nil || got != "old-secret" {
		t.Errorf("anonymous GET of the old version made public: %q %v", got, err)
	}
	_, err = read(anon, src, "k", "")
	denied(err, "anonymous GET of the current version made private")

	// 9. Existence does not leak: 404 only to who may list.
	gone := putV("gone", "x")
	_, err = alice.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(src), Key: aws.String("gone"), VersionId: aws.String(gone)})
	must(err, "DeleteObject ?versionId")
	type probe struct {
		who        string
		c          *s3.Client
		key, vid   string
		wantListed string // the code once the principal may list
	}
	probes := []probe{
		{"bob", bob, "nokey", "", "NoSuchKey"},
		{"bob", bob, "gone", gone, "NoSuchVersion"},
		{"anonymous", anon, "public/nokey", "", "NoSuchKey"},
	}
	check := func(listed bool) {
		t.Helper()
		for _, p := range probes {
			_, err := read(p.c, src, p.key, p.vid)
			hin := &s3.HeadObjectInput{Bucket: aws.String(src), Key: aws.String(p.key)}
			if p.vid != "" {
				hin.VersionId = aws.String(p.vid)
			}
			_, herr := p.c.HeadObject(ctx, hin)
			what := fmt.Sprintf("%s GET/HEAD %s %s (may list: %v)", p.who, p.key, p.vid, listed)
			if !listed {
				denied(err, what)
				if httpStatus(herr) != 403 {
					t.Errorf("%s: HEAD %v, want 403", what, herr)
				}
				continue
			}
			if httpStatus(err) != 404 || apiCode(err) != p.wantListed || httpStatus(herr) != 404 {
				t.Errorf("%s: GET %v, HEAD %v, want 404 %s", what, err, herr, p.wantListed)
			}
		}
		_, err := bob.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(dst), Key: aws.String("from-missing"), CopySource: aws.String(src + "/nokey")})
		if !listed {
			denied(err, "bob copies a missing source")
		} else if httpStatus(err) != 404 || apiCode(err) != "NoSuchKey" {
			t.Errorf("bob copies a missing source (may list): %v", err)
		}
	}
	getters := stmt("Allow", bobP, src+"/*", "s3:GetObject", "s3:GetObjectVersion")
	public := stmt("Allow", anyone, src+"/public/*", "s3:GetObject")
	policy(getters, public)
	check(false)
	policy(getters, public, stmt("Allow", anyone, src, "s3:ListBucket"))
	check(true)
	// The owner may list: 404.
	if _, err := read(alice, src, "nokey", ""); httpStatus(err) != 404 || apiCode(err) != "NoSuchKey" {
		t.Errorf("owner GET of a missing key: %v", err)
	}
	if keys := dstKeys(); len(keys) != 1 || keys[0] != "current" {
		t.Errorf("bob's bucket holds %v, want only the allowed copy", keys)
	}
}

// A missing key is 404 to a caller whose s3:ListBucket grant is
// conditioned on s3:prefix only when the key lies under that prefix (a
// listing with the key as prefix would show it absent); elsewhere 403.
func TestMissingKeyPrefixConditionedList(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	out, err := g.Admin("user", "create", "--uid", "pfxbob", "--display-name", "pfxbob")
	if err != nil {
		t.Fatal(err)
	}
	admin := sdkClient(g, g.AccessKey, g.SecretKey)
	bob := sdkClient(g, jsonField(t, out, "access_key"), jsonField(t, out, "secret_key"))
	b := "pfx-missing"
	if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/pfxbob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::` + b + `/*"},
 {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/pfxbob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::` + b + `",
  "Condition":{"StringLike":{"s3:prefix":"pub/*"}}}]}`
	if _, err := admin.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(b), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{"pub/missing": 404, "priv/missing": 403} {
		_, err := bob.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
		var re *awshttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != want {
			t.Errorf("HEAD %s: %v, want %d", key, err, want)
		}
		_, err = bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
		wantCode := map[int]string{404: "NoSuchKey", 403: "AccessDenied"}[want]
		if apiCode(err) != wantCode {
			t.Errorf("GET %s: %v, want %s", key, err, wantCode)
		}
	}
}
