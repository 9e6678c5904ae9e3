//go:build rados

package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestCephIAM: the IAM and STS real-client tests on gateways over Ceph,
// where accounts, users, roles, OIDC providers and the STS keyring are
// RADOS objects: aws-sdk-go-v2 (IAM, the AssumeRole and web identity
// credential providers), the aws CLI and boto3 (tests/python's IAM and STS
// files), and two gateways sharing one cluster: an IAM change through one
// holds on the other, a token minted by one verifies on the other.
func TestCephIAM(t *testing.T) {
	conf, _ := cephCluster(t)
	t.Run("sdk-accounts", func(t *testing.T) { iamAccountsOn(t, startRadosGateways(t, conf, 1)[0]) })
	t.Run("sdk-assume-role", func(t *testing.T) { stsAssumeRoleOn(t, startRadosGateways(t, conf, 1)[0]) })
	t.Run("sdk-web-identity", func(t *testing.T) { stsWebIdentityOn(t, startRadosGateways(t, conf, 1)[0]) })
	t.Run("sdk-tenant-account", func(t *testing.T) { iamAccountInTenantOn(t, startRadosGateways(t, conf, 1)[0]) })
	t.Run("cli-boto3", func(t *testing.T) {
		requireTool(t, "python3", "-c", "import boto3, pytest")
		requireTool(t, "aws", "--version")
		pytest(t, startRadosGateways(t, conf, 1)[0], "python/test_iam.py", "python/test_sts.py", "python/test_iam_paging.py")
	})
	t.Run("two-gateways", func(t *testing.T) { iamTwoGateways(t, startRadosGateways(t, conf, 2)) })
}

// iamTwoGateways: a user, key, role and policy made through gateway 0 work
// through gateway 1 at once (nothing cached there yet), and so does a
// session token gateway 0 minted: the keyring is shared through the
// metadata pool.
func iamTwoGateways(t *testing.T, gws []*Gateway) {
	ctx := context.Background()
	acme := newAccount(t, gws[0], "acme", "ACMEROOTKEY000000001")
	rootCreds := static("ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	root := iamWith(gws[0], rootCreds)
	if _, err := s3With(gws[1], rootCreds).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("shared")}); err != nil {
		t.Fatalf("root on gateway 1: %v", err)
	}
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("alice")}); err != nil {
		t.Fatal(err)
	}
	k, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("alice")})
	if err != nil {
		t.Fatal(err)
	}
	alice := static(aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey))
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::` + acme + `:user/alice"},"Action":"sts:AssumeRole"}]}`
	if _, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("Writer"), AssumeRolePolicyDocument: aws.String(trust)}); err != nil {
		t.Fatal(err)
	}
	rw := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::shared/*"}]}`
	if _, err := root.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("Writer"), PolicyName: aws.String("w"), PolicyDocument: aws.String(rw)}); err != nil {
		t.Fatal(err)
	}
	// alice has no identity policy: S3 refuses her on either gateway.
	if _, err := s3With(gws[1], alice).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("shared"), Key: aws.String("x"), Body: strings.NewReader("x")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("alice without a policy on gateway 1: %v", err)
	}
	prov := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient(gws[0], alice), "arn:aws:iam::"+acme+":role/Writer"))
	if _, err := s3With(gws[1], prov).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("shared"), Key: aws.String("w"), Body: strings.NewReader("w")}); err != nil {
		t.Fatalf("session minted by gateway 0, used on gateway 1: %v", err)
	}
	if _, err := s3With(gws[1], prov).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("shared"), Key: aws.String("w")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("session GET outside the role's policy on gateway 1: %v", err)
	}
	// Deleting the role through gateway 1 ends the session on gateway 0
	// at once (gateway 0 has not verified it yet, so nothing is cached).
	if _, err := iamWith(gws[1], rootCreds).DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String("Writer"), PolicyName: aws.String("w")}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamWith(gws[1], rootCreds).DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("Writer")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3With(gws[0], prov).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("shared"), Key: aws.String("w2"), Body: strings.NewReader("w")}); err == nil {
		t.Fatal("a session of a deleted role still writes")
	}
}
