package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The access matrix: who (owner, another user, anonymous, a wrong secret,
// the admin) × operation × how the bucket is shared (private, ACL grant,
// policy allow, policy deny, public access block), against a real
// `cairn serve` with aws-sdk-go-v2. Each cell asserts the status code and,
// on a denial, that nothing changed.

const matrixPolicyAllow = `{"Version":"2012-10-17","Statement":[
 {"Sid":"BobRW","Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":["s3:GetObject","s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::%[1]s/*"},
 {"Sid":"BobList","Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::%[1]s"},
 {"Sid":"AnyoneRead","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::%[1]s/*"}]}`

const matrixPolicyDeny = `{"Version":"2012-10-17","Statement":[
 {"Sid":"NoBob","Effect":"Deny","Principal":{"AWS":"bob"},"Action":"s3:*","Resource":["arn:aws:s3:::%[1]s","arn:aws:s3:::%[1]s/*"]}]}`

const matrixPolicyPublic = `{"Version":"2012-10-17","Statement":[
 {"Sid":"Public","Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::%[1]s","arn:aws:s3:::%[1]s/*"]}]}`

type matrixEnv struct {
	t       *testing.T
	g       *Gateway
	clients map[string]*s3.Client // owner, bob, anon, wrong, admin
	admin   *s3.Client
}

func (m *matrixEnv) must(err error, what string) {
	m.t.Helper()
	if err != nil {
		m.t.Fatalf("%s: %v", what, err)
	}
}

func TestAccessMatrix(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	m := &matrixEnv{t: t, g: g, clients: map[string]*s3.Client{}}
	users := map[string][2]string{}
	for _, u := range []string{"alice", "bob"} {
		out, err := g.Admin("user", "create", "--uid", u, "--display-name", strings.ToUpper(u[:1])+u[1:], "--email", u+"@example.com")
		m.must(err, "create user")
		users[u] = [2]string{jsonField(t, out, "access_key"), jsonField(t, out, "secret_key")}
	}
	m.admin = sdkClient(g, g.AccessKey, g.SecretKey)
	m.clients["owner"] = sdkClient(g, users["alice"][0], users["alice"][1])
	m.clients["bob"] = sdkClient(g, users["bob"][0], users["bob"][1])
	m.clients["wrong"] = sdkClient(g, users["bob"][0], "not-bobs-secret-not-bobs-secret-not-bob")
	m.clients["anon"] = s3.New(s3.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	m.clients["admin"] = m.admin
	owner := m.clients["owner"]
	who := []string{"owner", "bob", "anon", "wrong", "admin"}

	// The five ways a bucket can be shared.
	setups := map[string]func(b string){
		"private": func(b string) {},
		"aclgrant": func(b string) {
			_, err := owner.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b,
				GrantFullControl: aws.String(`id="alice"`), GrantRead: aws.String(`emailAddress="bob@example.com"`), GrantWrite: aws.String(`id="bob"`)})
			m.must(err, "PutBucketAcl")
		},
		"polallow": func(b string) {
			_, err := owner.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: aws.String(fmt.Sprintf(matrixPolicyAllow, b))})
			m.must(err, "PutBucketPolicy")
		},
		"poldeny": func(b string) {
			_, err := owner.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, ACL: types.BucketCannedACLPublicReadWrite})
			m.must(err, "PutBucketAcl")
			_, err = owner.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: aws.String(fmt.Sprintf(matrixPolicyDeny, b))})
			m.must(err, "PutBucketPolicy")
		},
		"pab": func(b string) {
			_, err := owner.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, ACL: types.BucketCannedACLPublicReadWrite})
			m.must(err, "PutBucketAcl")
			_, err = owner.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: aws.String(fmt.Sprintf(matrixPolicyPublic, b))})
			m.must(err, "PutBucketPolicy")
			_, err = owner.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: &b, PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{
				BlockPublicAcls: aws.Bool(true), IgnorePublicAcls: aws.Bool(true), RestrictPublicBuckets: aws.Bool(true)}})
			m.must(err, "PutPublicAccessBlock")
		},
	}
	// objACL is the ACL of the object every principal reads.
	objACL := map[string]func(*s3.PutObjectInput){
		"aclgrant": func(in *s3.PutObjectInput) {
			in.GrantFullControl, in.GrantRead = aws.String(`id="alice"`), aws.String(`id="bob"`)
		},
		"poldeny": func(in *s3.PutObjectInput) { in.ACL = types.ObjectCannedACLPublicRead },
		"pab":     func(in *s3.PutObjectInput) { in.ACL = types.ObjectCannedACLPublicRead },
	}
	for _, sh := range []string{"private", "aclgrant", "polallow", "poldeny", "pab"} {
		b := "mx-" + sh
		_, err := owner.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b})
		m.must(err, "CreateBucket")
		in := &s3.PutObjectInput{Bucket: &b, Key: aws.String("obj"), Body: strings.NewReader("data")}
		if f := objACL[sh]; f != nil {
			f(in)
		}
		_, err = owner.PutObject(ctx, in)
		m.must(err, "PutObject obj")
		for _, w := range who {
			_, err = owner.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("del-" + w), Body: strings.NewReader("d")})
			m.must(err, "PutObject del")
		}
		setups[sh](b) // after the objects: the PAB may forbid public ACLs
	}

	const ok, ad, sig = "", "AccessDenied", "SignatureDoesNotMatch"
	// expect[op][sharing] = owner, bob, anon results (wrong secret is
	// always SignatureDoesNotMatch; the admin always succeeds).
	type row struct{ owner, bob, anon string }
	expect := map[string]map[string]row{
		"ListObjectsV2": {"private": {ok, ad, ad}, "aclgrant": {ok, ok, ad}, "polallow": {ok, ok, ad}, "poldeny": {ok, ad, ok}, "pab": {ok, ad, ad}},
		"GetObject":     {"private": {ok, ad, ad}, "aclgrant": {ok, ok, ad}, "polallow": {ok, ok, ok}, "poldeny": {ok, ad, ok}, "pab": {ok, ad, ad}},
		"PutObject":     {"private": {ok, ad, ad}, "aclgrant": {ok, ok, ad}, "polallow": {ok, ok, ad}, "poldeny": {ok, ad, ok}, "pab": {ok, ad, ad}},
		"DeleteObject":  {"private": {ok, ad, ad}, "aclgrant": {ok, ok, ad}, "polallow": {ok, ok, ad}, "poldeny": {ok, ad, ok}, "pab": {ok, ad, ad}},
		"GetBucketAcl":  {"private": {ok, ad, ad}, "aclgrant": {ok, ad, ad}, "polallow": {ok, ad, ad}, "poldeny": {ok, ad, ad}, "pab": {ok, ad, ad}},
		"GetObjectAcl":  {"private": {ok, ad, ad}, "aclgrant": {ok, ad, ad}, "polallow": {ok, ad, ad}, "poldeny": {ok, ad, ad}, "pab": {ok, ad, ad}},
		"PutBucketAcl":  {"private": {ok, ad, ad}, "aclgrant": {ok, ad, ad}, "polallow": {ok, ad, ad}, "poldeny": {ok, ad, ad}, "pab": {ad, ad, ad}}, // pab: the ACL is public (BlockPublicAcls)
		"GetBucketPolicy": {"private": {"NoSuchBucketPolicy", ad, ad}, "aclgrant": {"NoSuchBucketPolicy", ad, ad},
			"polallow": {ok, ad, ad}, "poldeny": {ok, ad, ad}, "pab": {ok, ad, ad}},
		"DeleteBucketPolicy": {"private": {ok, ad, ad}, "aclgrant": {ok, ad, ad}, "polallow": {ok, ad, ad}, "poldeny": {ok, ad, ad}, "pab": {ok, ad, ad}},
		"DeleteBucket":       {"private": {"BucketNotEmpty", ad, ad}, "aclgrant": {"BucketNotEmpty", ad, ad}, "polallow": {"BucketNotEmpty", ad, ad}, "poldeny": {"BucketNotEmpty", ad, ad}, "pab": {"BucketNotEmpty", ad, ad}},
	}
	// Mutations run last among the owner's (DeleteBucketPolicy changes the
	// bucket), so principals run owner last.
	order := []string{"bob", "anon", "wrong", "admin", "owner"}
	ops := []string{"ListObjectsV2", "GetObject", "GetBucketAcl", "GetObjectAcl", "GetBucketPolicy", "PutObject", "DeleteObject", "PutBucketAcl", "DeleteBucket", "DeleteBucketPolicy"}
	cells := 0
	for _, sh := range []string{"private", "aclgrant", "polallow", "poldeny", "pab"} {
		b := "mx-" + sh
		for _, op := range ops {
			for _, w := range order {
				if w == "admin" && (op == "DeleteBucketPolicy" || op == "PutBucketAcl") {
					continue // would change the cell for the owner
				}
				var want string
				switch w {
				case "wrong":
					want = sig
				case "admin", "owner":
					want = expect[op][sh].owner
				case "bob":
					want = expect[op][sh].bob
				case "anon":
					want = expect[op][sh].anon
				}
				before := m.snapshot(b)
				if strings.HasPrefix(before, "list:") {
					t.Fatalf("admin cannot see %s: %s", b, before)
				}
				cells++
				got := m.run(w, op, b)
				if got != want {
					t.Errorf("%s %s on %s: got %q, want %q", w, op, sh, orOK(got), orOK(want))
				}
				if want != ok && w != "owner" {
					if after := m.snapshot(b); after != before {
						t.Errorf("%s %s on %s was denied but changed the bucket:\nbefore %s\nafter  %s", w, op, sh, before, after)
					}
				}
			}
		}
	}

	t.Logf("%d cells; e.g. mx-aclgrant is %s", cells, m.snapshot("mx-aclgrant"))
	// A missing bucket is NoSuchBucket to everyone, signed or not.
	for _, w := range []string{"owner", "bob", "anon"} {
		if got := m.run(w, "GetObject", "mx-nosuch"); got != "NoSuchBucket" {
			t.Errorf("%s GetObject on a missing bucket: %q", w, got)
		}
	}
	// BlockPublicAcls refuses a public ACL even to the owner.
	if _, err := owner.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("mx-pab"), ACL: types.BucketCannedACLPublicRead}); apiCode(err) != ad {
		t.Errorf("public ACL under BlockPublicAcls: %v", err)
	}

	// SNS and admin API through the same decision point.
	for _, tc := range []struct {
		who, method, path, body string
		status                  int
	}{
		{"admin", "GET", "/admin/user?uid=bob", "", 200},
		{"owner", "GET", "/admin/user?uid=bob", "", 403},
		{"anon", "GET", "/admin/user?uid=bob", "", 403},
		{"wrong", "GET", "/admin/user?uid=bob", "", 403},
		{"owner", "PUT", "/admin/user?uid=mallory", "", 403},
		{"owner", "POST", "/", "Action=ListTopics", 200},
		{"anon", "POST", "/", "Action=ListTopics", 403},
		{"wrong", "POST", "/", "Action=ListTopics", 403},
	} {
		keys := map[string][2]string{"admin": {g.AccessKey, g.SecretKey}, "owner": users["alice"], "wrong": {users["bob"][0], "not-bobs-secret"}}
		status := rawRequest(t, g, tc.method, tc.path, tc.body, keys[tc.who])
		if status != tc.status {
			t.Errorf("%s %s %s: %d, want %d", tc.who, tc.method, tc.path, status, tc.status)
		}
	}
	if out, err := g.Admin("user", "info", "--uid", "mallory"); err == nil && strings.Contains(out, "mallory") {
		t.Error("a denied admin call created a user")
	}
}

func orOK(s string) string {
	if s == "" {
		return "OK"
	}
	return s
}

// run performs op as who on bucket b and returns the error code ("" = ok).
func (m *matrixEnv) run(who, op, b string) string {
	ctx := context.Background()
	c := m.clients[who]
	var err error
	switch op {
	case "ListObjectsV2":
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b})
	case "GetObject":
		var out *s3.GetObjectOutput
		out, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("obj")})
		if err == nil {
			body, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if string(body) != "data" {
				return "wrong body " + string(body)
			}
		}
	case "PutObject":
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("put-" + who), Body: strings.NewReader("p")})
	case "DeleteObject":
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("del-" + who)})
	case "GetBucketAcl":
		_, err = c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &b})
	case "GetObjectAcl":
		_, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: &b, Key: aws.String("obj")})
	case "PutBucketAcl":
		// The bucket's current ACL, put back unchanged.
		cur, gerr := m.clients["owner"].GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &b})
		m.must(gerr, "GetBucketAcl")
		_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, AccessControlPolicy: &types.AccessControlPolicy{Owner: cur.Owner, Grants: cur.Grants}})
	case "GetBucketPolicy":
		_, err = c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: &b})
	case "DeleteBucketPolicy":
		_, err = c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: &b})
	case "DeleteBucket":
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &b})
	default:
		m.t.Fatalf("unknown op %s", op)
	}
	if err != nil {
		if code := apiCode(err); code != "" {
			return code
		}
		return err.Error()
	}
	return ""
}

// snapshot is the bucket's state as the admin sees it: keys, ACL, policy.
func (m *matrixEnv) snapshot(b string) string {
	ctx := context.Background()
	var sb strings.Builder
	l, err := m.admin.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b})
	if err != nil {
		return "list: " + apiCode(err)
	}
	for _, o := range l.Contents {
		sb.WriteString(aws.ToString(o.Key) + " ")
	}
	acl, err := m.admin.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &b})
	if err == nil {
		for _, g := range acl.Grants {
			fmt.Fprintf(&sb, "[%s %s %s]", aws.ToString(g.Grantee.ID), aws.ToString(g.Grantee.URI), g.Permission)
		}
	}
	p, err := m.admin.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: &b})
	if err == nil {
		sb.WriteString(" policy:" + fmt.Sprint(len(aws.ToString(p.Policy))))
	}
	return sb.String()
}

// rawRequest sends a request signed with keys (none = anonymous) and
// returns the status.
func rawRequest(t *testing.T, g *Gateway, method, path, body string, keys [2]string) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, g.Endpoint+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	service := "s3"
	if body != "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		service = "sns"
	}
	if keys[0] != "" {
		sum := "UNSIGNED-PAYLOAD"
		if body != "" {
			sum = sha256Hex(body)
		}
		r.Header.Set("X-Amz-Content-Sha256", sum)
		err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: keys[0], SecretAccessKey: keys[1]}, r, sum, service, "us-east-1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
