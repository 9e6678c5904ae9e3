package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func iamClient(g *Gateway, ak, sk string) *iam.Client {
	return iam.New(iam.Options{
		BaseEndpoint: aws.String(g.Endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
	})
}

// newAccount creates an account and its root user (with the given keys)
// through `cairn admin`, as an operator would.
func newAccount(t *testing.T, g *Gateway, name, rootKey string) string {
	t.Helper()
	out, err := g.Admin("account", "create", "--account-name", name, "--email", name+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	id := jsonField(t, out, "id")
	if _, err := g.Admin("user", "create", "--uid", name+"-root", "--account-id", id, "--account-root",
		"--access-key", rootKey, "--secret", rootKey+"-secret"); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestIAMAccounts drives the IAM query API and S3 with aws-sdk-go-v2: an
// account root makes a user, gives it keys and an inline policy; the user
// may do exactly what the policy allows on the account's bucket; another
// account's user needs both its identity policy and the bucket policy.
func TestIAMAccounts(t *testing.T) { iamAccountsOn(t, StartGateway(t)) }

// iamAccountsOn is TestIAMAccounts on any fresh gateway (tests/ceph_iam_test.go
// runs it over RADOS).
func iamAccountsOn(t *testing.T, g *Gateway) {
	ctx := context.Background()
	acme := newAccount(t, g, "acme", "ACMEROOTKEY000000001")
	globex := newAccount(t, g, "globex", "GLOBEXROOTKEY0000001")
	root := iamClient(g, "ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	root2 := iamClient(g, "GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret")
	rootS3 := sdkClient(g, "ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")

	// The root's bucket belongs to the account.
	if _, err := rootS3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("acme-data")}); err != nil {
		t.Fatal(err)
	}
	lb, err := rootS3.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 1 || aws.ToString(lb.Owner.ID) != acme {
		t.Fatalf("root's buckets: %+v %v", lb, err)
	}
	if _, err := rootS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("in/a"), Body: strings.NewReader("A")}); err != nil {
		t.Fatal(err)
	}

	// A user with keys and an inline policy.
	cu, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("Alice"), Path: aws.String("/eng/")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "arn:aws:iam::" + acme + ":user/eng/Alice"; aws.ToString(cu.User.Arn) != want {
		t.Fatalf("arn %s, want %s", aws.ToString(cu.User.Arn), want)
	}
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("alice")}); apiCode(err) != "EntityAlreadyExists" {
		t.Fatalf("alice again: %v", err)
	}
	key, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("alice")})
	if err != nil {
		t.Fatal(err)
	}
	alice := sdkClient(g, aws.ToString(key.AccessKey.AccessKeyId), aws.ToString(key.AccessKey.SecretAccessKey))
	aliceIAM := iamClient(g, aws.ToString(key.AccessKey.AccessKeyId), aws.ToString(key.AccessKey.SecretAccessKey))

	get := func(c *s3.Client, k string) error {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String(k)})
		return err
	}
	put := func(c *s3.Client, k string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String(k), Body: strings.NewReader("x")})
		return err
	}
	// No identity policy: nothing, even on its own account's bucket.
	if err := get(alice, "in/a"); apiCode(err) != "AccessDenied" {
		t.Fatalf("alice without policy: %v", err)
	}
	policy := `{"Version":"2012-10-17","Statement":[
	 {"Sid":"ReadIn","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::acme-data/in/*"},
	 {"Sid":"WriteOut","Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::acme-data/out/*"}]}`
	if _, err := root.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String("alice"), PolicyName: aws.String("io"), PolicyDocument: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	if err := get(alice, "in/a"); err != nil {
		t.Fatalf("alice reads in/: %v", err)
	}
	if err := put(alice, "out/b"); err != nil {
		t.Fatalf("alice writes out/: %v", err)
	}
	for name, err := range map[string]error{
		"write in/": put(alice, "in/c"),
		"read out/": get(alice, "out/b"),
		"delete": func() error {
			_, err := alice.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("in/a")})
			return err
		}(),
		"versioning": func() error {
			_, err := alice.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("acme-data")})
			return err
		}(),
		"create bucket": func() error {
			_, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alice-own")})
			return err
		}(),
	} {
		if apiCode(err) != "AccessDenied" {
			t.Errorf("alice %s: %v, want AccessDenied", name, err)
		}
	}
	if err := get(rootS3, "in/c"); apiCode(err) != "NoSuchKey" {
		t.Errorf("a denied write stored something: %v", err)
	}
	// IAM itself needs identity policies too.
	if _, err := aliceIAM.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("mallory")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("alice creates a user: %v", err)
	}
	// SNS too: identity policies decide for an account's users.
	if st, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, aws.ToString(key.AccessKey.AccessKeyId), aws.ToString(key.AccessKey.SecretAccessKey), "alice-topic", nil); st != http.StatusForbidden {
		t.Fatalf("alice creates a topic without an sns policy: %d %s", st, body)
	}
	if st, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, "ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret", "acme-topic", nil); st != http.StatusOK {
		t.Fatalf("the root creates a topic: %d %s", st, body)
	}
	// A malformed policy is refused and changes nothing.
	if _, err := root.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String("alice"), PolicyName: aws.String("io"),
		PolicyDocument: aws.String(`{"Statement":[{"Effect":"Allow","Action":"s3:Teleport","Resource":"*"}]}`)}); apiCode(err) != "MalformedPolicyDocument" {
		t.Fatalf("malformed: %v", err)
	}
	gp, err := root.GetUserPolicy(ctx, &iam.GetUserPolicyInput{UserName: aws.String("alice"), PolicyName: aws.String("io")})
	if err != nil {
		t.Fatal(err)
	}
	if doc, _ := url.PathUnescape(aws.ToString(gp.PolicyDocument)); doc != policy {
		t.Fatalf("policy after a malformed put:\n%s", doc)
	}
	if err := get(alice, "in/a"); err != nil {
		t.Fatalf("alice after the malformed put: %v", err)
	}

	// Keys: at most two; an inactive key stops authenticating at once.
	if _, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("alice")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("alice")}); apiCode(err) != "LimitExceeded" {
		t.Fatalf("third key: %v", err)
	}
	if _, err := root.UpdateAccessKey(ctx, &iam.UpdateAccessKeyInput{UserName: aws.String("alice"), AccessKeyId: key.AccessKey.AccessKeyId, Status: "Inactive"}); err != nil {
		t.Fatal(err)
	}
	if err := get(alice, "in/a"); apiCode(err) != "InvalidAccessKeyId" {
		t.Fatalf("inactive key: %v", err)
	}
	if _, err := root.UpdateAccessKey(ctx, &iam.UpdateAccessKeyInput{UserName: aws.String("alice"), AccessKeyId: key.AccessKey.AccessKeyId, Status: "Active"}); err != nil {
		t.Fatal(err)
	}

	// Another account's user: its identity policy alone is not enough...
	if _, err := root2.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("carol")}); err != nil {
		t.Fatal(err)
	}
	ck, err := root2.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("carol")})
	if err != nil {
		t.Fatal(err)
	}
	carol := sdkClient(g, aws.ToString(ck.AccessKey.AccessKeyId), aws.ToString(ck.AccessKey.SecretAccessKey))
	if _, err := root2.AttachUserPolicy(ctx, &iam.AttachUserPolicyInput{UserName: aws.String("carol"), PolicyArn: aws.String("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}); err != nil {
		t.Fatal(err)
	}
	if err := get(carol, "in/a"); apiCode(err) != "AccessDenied" {
		t.Fatalf("carol without bucket policy: %v", err)
	}
	// ...nor are her account's IAM resources and ours mixed.
	if _, err := root2.GetUser(ctx, &iam.GetUserInput{UserName: aws.String("alice")}); apiCode(err) != "AccessDenied" && apiCode(err) != "NoSuchEntity" {
		t.Fatalf("globex reads acme's user: %v", err)
	}
	// ...with a bucket policy naming her, both sides allow.
	bp, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Sid": "Carol", "Effect": "Allow", "Principal": map[string]any{"AWS": "arn:aws:iam::" + globex + ":user/carol"},
		"Action": []string{"s3:GetObject", "s3:PutObject"}, "Resource": "arn:aws:s3:::acme-data/*"}}})
	if _, err := rootS3.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("acme-data"), Policy: aws.String(string(bp))}); err != nil {
		t.Fatal(err)
	}
	if err := get(carol, "in/a"); err != nil {
		t.Fatalf("carol with both sides: %v", err)
	}
	// The bucket policy allows PutObject, her identity (read-only) does not.
	if err := put(carol, "in/z"); apiCode(err) != "AccessDenied" {
		t.Fatalf("carol writes: %v", err)
	}
	// Without her identity policy the bucket policy alone does not do.
	if _, err := root2.DetachUserPolicy(ctx, &iam.DetachUserPolicyInput{UserName: aws.String("carol"), PolicyArn: aws.String("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}); err != nil {
		t.Fatal(err)
	}
	if err := get(carol, "in/a"); apiCode(err) != "AccessDenied" {
		t.Fatalf("carol after detach: %v", err)
	}

	// Even with every IAM permission a user never reaches the root's keys
	// or policies (the root is the account, not an IAM user).
	if _, err := root.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String("alice"), PolicyName: aws.String("admin"),
		PolicyDocument: aws.String(`{"Statement":[{"Effect":"Allow","Action":"iam:*","Resource":"*"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := aliceIAM.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("acme-root")}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("alice makes a root key: %v", err)
	}
	if _, err := aliceIAM.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String("acme-root"), PolicyName: aws.String("x"),
		PolicyDocument: aws.String(`{"Statement":[{"Effect":"Deny","Action":"s3:*","Resource":"*"}]}`)}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("alice puts a root policy: %v", err)
	}
	if _, err := aliceIAM.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("helper")}); err != nil {
		t.Fatalf("alice with iam:* creates a user: %v", err)
	}
	if _, err := root.DeleteUser(ctx, &iam.DeleteUserInput{UserName: aws.String("helper")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.DeleteUserPolicy(ctx, &iam.DeleteUserPolicyInput{UserName: aws.String("alice"), PolicyName: aws.String("admin")}); err != nil {
		t.Fatal(err)
	}

	// Listing, summary, deletion rules.
	lu, err := root.ListUsers(ctx, &iam.ListUsersInput{})
	if err != nil || len(lu.Users) != 1 || aws.ToString(lu.Users[0].UserName) != "Alice" {
		t.Fatalf("list users: %+v %v", lu, err)
	}
	sum, err := root.GetAccountSummary(ctx, &iam.GetAccountSummaryInput{})
	if err != nil || sum.SummaryMap["Users"] != 1 || sum.SummaryMap["AccessKeysPerUserQuota"] != 2 {
		t.Fatalf("summary: %+v %v", sum, err)
	}
	if _, err := root.DeleteUser(ctx, &iam.DeleteUserInput{UserName: aws.String("alice")}); apiCode(err) != "DeleteConflict" {
		t.Fatalf("delete a user with keys: %v", err)
	}
	if _, err := root.GetUser(ctx, &iam.GetUserInput{UserName: aws.String("nobody")}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("no such user: %v", err)
	}

	// A user outside accounts works as before and has no IAM to manage.
	out, err := g.Admin("user", "create", "--uid", "legacy")
	if err != nil {
		t.Fatal(err)
	}
	lk, ls := jsonField(t, out, "access_key"), jsonField(t, out, "secret_key")
	legacy := sdkClient(g, lk, ls)
	if _, err := legacy.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("legacy-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamClient(g, lk, ls).ListUsers(ctx, &iam.ListUsersInput{}); apiCode(err) != "AccessDenied" {
		t.Fatalf("legacy user lists IAM users: %v", err)
	}
	if err := get(legacy, "in/a"); apiCode(err) != "AccessDenied" {
		t.Fatalf("legacy reads acme's bucket: %v", err)
	}

	// The admin CLI sees accounts and their users.
	info, err := g.Admin("account", "info", "--account-name", "acme")
	if err != nil || jsonField(t, info, "id") != acme {
		t.Fatalf("account info: %s %v", info, err)
	}
	if _, err := g.Admin("account", "rm", "--account-id", acme); err == nil {
		t.Fatal("removed an account that has users and buckets")
	}
}

// TestIAMGroups: a group's policies reach its members at once, and leave
// with them.
func TestIAMGroups(t *testing.T) {
	ctx := context.Background()
	g := StartGateway(t)
	newAccount(t, g, "initech", "INITECHROOTKEY000001")
	root := iamClient(g, "INITECHROOTKEY000001", "INITECHROOTKEY000001-secret")
	rootS3 := sdkClient(g, "INITECHROOTKEY000001", "INITECHROOTKEY000001-secret")
	if _, err := rootS3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("tps")}); err != nil {
		t.Fatal(err)
	}
	if _, err := rootS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tps"), Key: aws.String("report"), Body: strings.NewReader("r")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("peter")}); err != nil {
		t.Fatal(err)
	}
	k, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("peter")})
	if err != nil {
		t.Fatal(err)
	}
	peter := sdkClient(g, aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey))
	read := func() error {
		_, err := peter.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tps"), Key: aws.String("report")})
		return err
	}
	if _, err := root.CreateGroup(ctx, &iam.CreateGroupInput{GroupName: aws.String("Readers")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateGroup(ctx, &iam.CreateGroupInput{GroupName: aws.String("readers")}); apiCode(err) != "EntityAlreadyExists" {
		t.Fatalf("readers again: %v", err)
	}
	if _, err := root.AttachGroupPolicy(ctx, &iam.AttachGroupPolicyInput{GroupName: aws.String("readers"), PolicyArn: aws.String("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}); err != nil {
		t.Fatal(err)
	}
	if err := read(); apiCode(err) != "AccessDenied" {
		t.Fatalf("peter outside the group: %v", err)
	}
	if _, err := root.AddUserToGroup(ctx, &iam.AddUserToGroupInput{GroupName: aws.String("readers"), UserName: aws.String("peter")}); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatalf("peter in the group: %v", err)
	}
	// An inline group Deny applies to members at once.
	if _, err := root.PutGroupPolicy(ctx, &iam.PutGroupPolicyInput{GroupName: aws.String("readers"), PolicyName: aws.String("noreports"),
		PolicyDocument: aws.String(`{"Statement":[{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::tps/report"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := read(); apiCode(err) != "AccessDenied" {
		t.Fatalf("group deny: %v", err)
	}
	if _, err := root.DeleteGroupPolicy(ctx, &iam.DeleteGroupPolicyInput{GroupName: aws.String("readers"), PolicyName: aws.String("noreports")}); err != nil {
		t.Fatal(err)
	}
	gg, err := root.GetGroup(ctx, &iam.GetGroupInput{GroupName: aws.String("readers")})
	if err != nil || len(gg.Users) != 1 || aws.ToString(gg.Users[0].UserName) != "peter" {
		t.Fatalf("get group: %+v %v", gg, err)
	}
	lg, err := root.ListGroupsForUser(ctx, &iam.ListGroupsForUserInput{UserName: aws.String("peter")})
	if err != nil || len(lg.Groups) != 1 || aws.ToString(lg.Groups[0].GroupName) != "Readers" {
		t.Fatalf("groups for user: %+v %v", lg, err)
	}

	// UpdateGroup: a rename keeps the id, policies and members; the new
	// name must be free; the caller needs the action on both ARNs.
	if _, err := root.CreateGroup(ctx, &iam.CreateGroupInput{GroupName: aws.String("Other")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UpdateGroup(ctx, &iam.UpdateGroupInput{GroupName: aws.String("readers"), NewGroupName: aws.String("OTHER")}); apiCode(err) != "EntityAlreadyExists" {
		t.Fatalf("rename onto another group: %v", err)
	}
	if _, err := root.UpdateGroup(ctx, &iam.UpdateGroupInput{GroupName: aws.String("nope"), NewGroupName: aws.String("x")}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("rename a missing group: %v", err)
	}
	if _, err := root.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String("peter"), PolicyName: aws.String("rename"),
		PolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"iam:UpdateGroup","Resource":"arn:aws:iam::*:group/Readers"}]}`)}); err != nil {
		t.Fatal(err)
	}
	peterIAM := iamClient(g, aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey))
	if _, err := peterIAM.UpdateGroup(ctx, &iam.UpdateGroupInput{GroupName: aws.String("Readers"), NewGroupName: aws.String("Mine")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("rename with the action on the old ARN only: %v", err)
	}
	if _, err := root.DeleteUserPolicy(ctx, &iam.DeleteUserPolicyInput{UserName: aws.String("peter"), PolicyName: aws.String("rename")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UpdateGroup(ctx, &iam.UpdateGroupInput{GroupName: aws.String("readers"), NewGroupName: aws.String("Auditors"), NewPath: aws.String("/audit/")}); err != nil {
		t.Fatalf("rename: %v", err)
	}
	if err := read(); err != nil {
		t.Fatalf("peter after the group's rename: %v", err)
	}
	if _, err := root.GetGroup(ctx, &iam.GetGroupInput{GroupName: aws.String("readers")}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("old name after rename: %v", err)
	}
	ga, err := root.GetGroup(ctx, &iam.GetGroupInput{GroupName: aws.String("auditors")})
	if err != nil || aws.ToString(ga.Group.GroupName) != "Auditors" || aws.ToString(ga.Group.Path) != "/audit/" ||
		aws.ToString(ga.Group.GroupId) != aws.ToString(gg.Group.GroupId) || len(ga.Users) != 1 {
		t.Fatalf("renamed group: %+v %v", ga, err)
	}
	if lg, err := root.ListGroupsForUser(ctx, &iam.ListGroupsForUserInput{UserName: aws.String("peter")}); err != nil || len(lg.Groups) != 1 || aws.ToString(lg.Groups[0].GroupName) != "Auditors" {
		t.Fatalf("groups for user after rename: %+v %v", lg, err)
	}
	if _, err := root.UpdateGroup(ctx, &iam.UpdateGroupInput{GroupName: aws.String("auditors"), NewGroupName: aws.String("Readers"), NewPath: aws.String("/")}); err != nil {
		t.Fatalf("rename back: %v", err)
	}
	if _, err := root.DeleteGroup(ctx, &iam.DeleteGroupInput{GroupName: aws.String("other")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.DeleteGroup(ctx, &iam.DeleteGroupInput{GroupName: aws.String("readers")}); apiCode(err) != "DeleteConflict" {
		t.Fatalf("delete a group with members: %v", err)
	}
	if _, err := root.RemoveUserFromGroup(ctx, &iam.RemoveUserFromGroupInput{GroupName: aws.String("readers"), UserName: aws.String("peter")}); err != nil {
		t.Fatal(err)
	}
	if err := read(); apiCode(err) != "AccessDenied" {
		t.Fatalf("peter after leaving: %v", err)
	}
	if _, err := root.DetachGroupPolicy(ctx, &iam.DetachGroupPolicyInput{GroupName: aws.String("readers"), PolicyArn: aws.String("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.DeleteGroup(ctx, &iam.DeleteGroupInput{GroupName: aws.String("readers")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.GetGroup(ctx, &iam.GetGroupInput{GroupName: aws.String("readers")}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("deleted group: %v", err)
	}
}
