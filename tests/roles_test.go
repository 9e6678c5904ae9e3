package tests

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// trustAccount is a trust policy letting account acct (its root, or its
// users with an identity Allow) assume the role.
func trustAccount(acct string) string {
	return `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::` + acct + `:root"},"Action":"sts:AssumeRole"}]}`
}

// TestIAMRoles drives the role actions with aws-sdk-go-v2's IAM client:
// create, read, list, policies, AWS's errors, and the account boundary.
func TestIAMRoles(t *testing.T) {
	ctx := context.Background()
	g := StartGateway(t)
	acme := newAccount(t, g, "acme", "ACMEROOTKEY000000001")
	newAccount(t, g, "globex", "GLOBEXROOTKEY0000001")
	root := iamClient(g, "ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	root2 := iamClient(g, "GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret")

	cr, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("Reader"), Path: aws.String("/app/"),
		AssumeRolePolicyDocument: aws.String(trustAccount(acme)), MaxSessionDuration: aws.Int32(7200),
		Description: aws.String("reads"), Tags: []iamtypes.Tag{{Key: aws.String("team"), Value: aws.String("data")}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "arn:aws:iam::" + acme + ":role/app/Reader"; aws.ToString(cr.Role.Arn) != want || !strings.HasPrefix(aws.ToString(cr.Role.RoleId), "AROA") {
		t.Fatalf("role %+v", cr.Role)
	}
	for name, in := range map[string]*iam.CreateRoleInput{
		"EntityAlreadyExists":     {RoleName: aws.String("reader"), AssumeRolePolicyDocument: aws.String(trustAccount(acme))},
		"MalformedPolicyDocument": {RoleName: aws.String("bad"), AssumeRolePolicyDocument: aws.String(`{"Statement":[{"Effect":"Allow","Action":"sts:AssumeRole"}]}`)},
		"InvalidInput":            {RoleName: aws.String("long"), AssumeRolePolicyDocument: aws.String(trustAccount(acme)), MaxSessionDuration: aws.Int32(50000)},
	} {
		if _, err := root.CreateRole(ctx, in); apiCode(err) != name {
			t.Errorf("CreateRole %s: %v", name, err)
		}
	}
	gr, err := root.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("READER")})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := url.QueryUnescape(aws.ToString(gr.Role.AssumeRolePolicyDocument))
	if doc != trustAccount(acme) || aws.ToInt32(gr.Role.MaxSessionDuration) != 7200 || len(gr.Role.Tags) != 1 {
		t.Fatalf("GetRole: %+v (%s)", gr.Role, doc)
	}
	lr, err := root.ListRoles(ctx, &iam.ListRolesInput{PathPrefix: aws.String("/app/")})
	if err != nil || len(lr.Roles) != 1 {
		t.Fatalf("ListRoles: %+v %v", lr, err)
	}
	// Another account sees nothing of it.
	if _, err := root2.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("Reader")}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("globex reads acme's role: %v", err)
	}

	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`
	if _, err := root.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("Reader"), PolicyName: aws.String("get"), PolicyDocument: aws.String(pol)}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("Reader"), PolicyName: aws.String("bad"), PolicyDocument: aws.String(`{"Statement":[]}`)}); apiCode(err) != "MalformedPolicyDocument" {
		t.Fatalf("malformed role policy: %v", err)
	}
	if lp, err := root.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String("Reader")}); err != nil || len(lp.PolicyNames) != 1 || lp.PolicyNames[0] != "get" {
		t.Fatalf("ListRolePolicies: %+v %v", lp, err)
	}
	gp, err := root.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String("Reader"), PolicyName: aws.String("get")})
	if d, _ := url.QueryUnescape(aws.ToString(gp.PolicyDocument)); err != nil || d != pol {
		t.Fatalf("GetRolePolicy: %v %q", err, d)
	}
	ro := "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
	if _, err := root.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("Reader"), PolicyArn: aws.String(ro)}); err != nil {
		t.Fatal(err)
	}
	if la, err := root.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String("Reader")}); err != nil || len(la.AttachedPolicies) != 1 {
		t.Fatalf("ListAttachedRolePolicies: %+v %v", la, err)
	}
	if _, err := root.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("Reader")}); apiCode(err) != "DeleteConflict" {
		t.Fatalf("delete a role with policies: %v", err)
	}
	if _, err := root.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{RoleName: aws.String("Reader"), PolicyDocument: aws.String("{")}); apiCode(err) != "MalformedPolicyDocument" {
		t.Fatalf("malformed trust update: %v", err)
	}
	if _, err := root.UpdateRole(ctx, &iam.UpdateRoleInput{RoleName: aws.String("Reader"), MaxSessionDuration: aws.Int32(3600)}); err != nil {
		t.Fatal(err)
	}

	// An account user needs an identity Allow for role actions.
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("bob")}); err != nil {
		t.Fatal(err)
	}
	k, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("bob")})
	if err != nil {
		t.Fatal(err)
	}
	bob := iamClient(g, aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey))
	if _, err := bob.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("Reader")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob reads the role without a policy: %v", err)
	}
	if _, err := bob.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("missing")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob learns a role is missing: %v", err)
	}
	if _, err := root.AttachUserPolicy(ctx, &iam.AttachUserPolicyInput{UserName: aws.String("bob"), PolicyArn: aws.String("arn:aws:iam::aws:policy/IAMReadOnlyAccess")}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("Reader")}); err != nil {
		t.Fatalf("bob with IAMReadOnlyAccess: %v", err)
	}
	if _, err := bob.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String("Reader"), PolicyName: aws.String("get")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob deletes a role policy: %v", err)
	}

	for _, step := range []error{
		func() error {
			_, err := root.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String("Reader"), PolicyArn: aws.String(ro)})
			return err
		}(),
		func() error {
			_, err := root.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String("Reader"), PolicyName: aws.String("get")})
			return err
		}(),
		func() error {
			_, err := root.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("Reader")})
			return err
		}(),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if _, err := root.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("Reader")}); apiCode(err) != "NoSuchEntity" {
		t.Fatalf("deleted role: %v", err)
	}
}
