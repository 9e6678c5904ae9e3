package tests

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestIAMAccountInTenant: an IAM account in a tenant (radosgw-admin's
// `account create --tenant`): its name is unique in its tenant only, its
// users are the tenant's ("t1$…"), its buckets live in the tenant's
// namespace, and its users', groups' and roles' policies naming
// "arn:aws:s3:::data/*" mean the tenant's bucket data, never the empty
// tenant's bucket of that name.
func TestIAMAccountInTenant(t *testing.T) { iamAccountInTenantOn(t, StartGateway(t)) }

// iamAccountInTenantOn is TestIAMAccountInTenant on any fresh gateway.
func iamAccountInTenantOn(t *testing.T, g *Gateway) {
	ctx := context.Background()
	out, err := g.Admin("account", "create", "--account-name", "acme", "--tenant", "t1")
	if err != nil {
		t.Fatal(err)
	}
	a1 := jsonField(t, out, "id")
	if tn := jsonField(t, out, "tenant"); tn != "t1" {
		t.Fatalf("account's tenant %q", tn)
	}
	if _, err := g.Admin("account", "create", "--account-name", "acme", "--tenant", "t1"); err == nil {
		t.Fatal("a second acme in t1")
	}
	a0 := newAccount(t, g, "acme", "PLAINACMEROOTKEY0001") // the empty tenant's acme
	if out, err := g.Admin("account", "info", "--account-name", "acme", "--tenant", "t1"); err != nil || jsonField(t, out, "id") != a1 {
		t.Fatalf("account info in t1: %s %v", out, err)
	}
	if out, err := g.Admin("account", "list", "--tenant", "t1"); err != nil || !strings.Contains(out, a1) || strings.Contains(out, a0) {
		t.Fatalf("account list in t1: %s %v", out, err)
	}
	if _, err := g.Admin("account", "info", "--account-id", a0, "--tenant", "t1"); err == nil {
		t.Fatal("the empty tenant's account found in t1")
	}
	// The root must be a user of the account's tenant.
	if _, err := g.Admin("user", "create", "--uid", "stray-root", "--account-id", a1, "--account-root"); err == nil {
		t.Fatal("an empty-tenant root for t1's account")
	}
	out, err = g.Admin("user", "create", "--tenant", "t1", "--uid", "root", "--account-id", a1, "--account-root",
		"--access-key", "T1ACMEROOTKEY0000001", "--secret", "t1-acme-root-secret")
	if err != nil {
		t.Fatal(err)
	}
	if id := jsonField(t, out, "user_id"); id != "t1$root" {
		t.Fatalf("root's id %q", id)
	}
	rootCreds := static("T1ACMEROOTKEY0000001", "t1-acme-root-secret")
	root, rootS3 := iamWith(g, rootCreds), s3With(g, rootCreds)
	plainS3 := s3With(g, static("PLAINACMEROOTKEY0001", "PLAINACMEROOTKEY0001-secret"))

	// Both acme roots have a bucket "data": two buckets.
	for _, c := range []struct {
		cl   *s3.Client
		body string
	}{{rootS3, "t1 data"}, {plainS3, "plain data"}} {
		if _, err := c.cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("data")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String("k"), Body: strings.NewReader(c.body)}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(cl *s3.Client, bucket string) (string, error) {
		o, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
		if err != nil {
			return "", err
		}
		defer o.Body.Close()
		b, err := io.ReadAll(o.Body)
		return string(b), err
	}

	// An IAM user of the account is a user of t1; its policy's
	// "arn:aws:s3:::data/*" is t1's data.
	u, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if id := aws.ToString(u.User.UserId); !strings.HasPrefix(id, "t1$AIDA") {
		t.Fatalf("bob's id %q", id)
	}
	key := func(name string) aws.CredentialsProvider {
		k, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return static(aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey))
	}
	bob := key("bob")
	readData := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`
	if _, err := root.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String("bob"), PolicyName: aws.String("read"), PolicyDocument: aws.String(readData)}); err != nil {
		t.Fatal(err)
	}
	if got, err := read(s3With(g, bob), "data"); err != nil || got != "t1 data" {
		t.Fatalf("bob reads data: %q %v", got, err)
	}
	if _, err := read(s3With(g, bob), ":data"); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob reads the empty tenant's data: %v", err)
	}

	// A group's policy is bound to the tenant the same way.
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("carol")}); err != nil {
		t.Fatal(err)
	}
	carol := key("carol")
	if _, err := root.CreateGroup(ctx, &iam.CreateGroupInput{GroupName: aws.String("readers")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutGroupPolicy(ctx, &iam.PutGroupPolicyInput{GroupName: aws.String("readers"), PolicyName: aws.String("read"), PolicyDocument: aws.String(readData)}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.AddUserToGroup(ctx, &iam.AddUserToGroupInput{GroupName: aws.String("readers"), UserName: aws.String("carol")}); err != nil {
		t.Fatal(err)
	}
	if got, err := read(s3With(g, carol), "data"); err != nil || got != "t1 data" {
		t.Fatalf("carol (group policy) reads data: %q %v", got, err)
	}
	if _, err := read(s3With(g, carol), ":data"); apiCode(err) != "AccessDenied" {
		t.Fatalf("carol reads the empty tenant's data: %v", err)
	}

	// A role session of the account is in t1 too: its bare bucket names
	// and its role policy's resources are t1's.
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::` + a1 + `:user/bob"},"Action":"sts:AssumeRole"}]}`
	if _, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("Writer"), AssumeRolePolicyDocument: aws.String(trust)}); err != nil {
		t.Fatal(err)
	}
	rw := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::data/*"}]}`
	if _, err := root.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("Writer"), PolicyName: aws.String("rw"), PolicyDocument: aws.String(rw)}); err != nil {
		t.Fatal(err)
	}
	session := s3With(g, aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient(g, bob), "arn:aws:iam::"+a1+":role/Writer")))
	if _, err := session.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String("k"), Body: strings.NewReader("by the session")}); err != nil {
		t.Fatalf("role session PUT data: %v", err)
	}
	if got, err := read(rootS3, "data"); err != nil || got != "by the session" {
		t.Fatalf("t1's data after the session's PUT: %q %v", got, err)
	}
	if got, err := read(plainS3, "data"); err != nil || got != "plain data" {
		t.Fatalf("the empty tenant's data after the session's PUT: %q %v", got, err)
	}
	if _, err := read(session, ":data"); apiCode(err) != "AccessDenied" {
		t.Fatalf("role session reads the empty tenant's data: %v", err)
	}
}
