package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
)

func stsClient(g *Gateway, creds aws.CredentialsProvider) *sts.Client {
	return sts.New(sts.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", Credentials: creds})
}

func static(ak, sk string) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(ak, sk, "")
}

// s3With is an S3 client on a credentials provider (an assumed role's).
func s3With(g *Gateway, creds aws.CredentialsProvider) *s3.Client {
	return s3.New(s3.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true, Credentials: creds})
}

func iamWith(g *Gateway, creds aws.CredentialsProvider) *iam.Client {
	return iam.New(iam.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", Credentials: creds})
}

// TestSTSAssumeRole: aws-sdk-go-v2's credential provider chain
// (stscreds.NewAssumeRoleProvider) assumes roles against cairn serve:
// trust policies with an external id, session policies, a bucket policy
// naming a session, cross-account assumption, GetSessionToken,
// GetCallerIdentity, and forged or orphaned tokens refused.
func TestSTSAssumeRole(t *testing.T) { stsAssumeRoleOn(t, StartGateway(t)) }

// stsAssumeRoleOn is TestSTSAssumeRole on any fresh gateway.
func stsAssumeRoleOn(t *testing.T, g *Gateway) {
	ctx := context.Background()
	acme := newAccount(t, g, "acme", "ACMEROOTKEY000000001")
	globex := newAccount(t, g, "globex", "GLOBEXROOTKEY0000001")
	rootCreds := static("ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	root := iamWith(g, rootCreds)
	root2 := iamWith(g, static("GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret"))
	rootS3 := s3With(g, rootCreds)
	root2S3 := s3With(g, static("GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret"))
	for _, c := range []struct {
		cl *s3.Client
		b  string
	}{{rootS3, "acme-data"}, {root2S3, "globex-data"}} {
		if _, err := c.cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(c.b)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(c.b), Key: aws.String("a"), Body: strings.NewReader("A")}); err != nil {
			t.Fatal(err)
		}
	}

	// alice, without any identity policy, may assume Writer with the
	// external id: the trust policy names her.
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("alice")}); err != nil {
		t.Fatal(err)
	}
	k, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("alice")})
	if err != nil {
		t.Fatal(err)
	}
	aliceCreds := static(aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey))
	aliceSTS := stsClient(g, aliceCreds)
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::` + acme + `:user/alice"},
	  "Action":["sts:AssumeRole","sts:TagSession"],"Condition":{"StringEquals":{"sts:ExternalId":"ext-1234"}}}]}`
	if _, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("Writer"), AssumeRolePolicyDocument: aws.String(trust)}); err != nil {
		t.Fatal(err)
	}
	rw := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::acme-data/*"}]}`
	if _, err := root.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("Writer"), PolicyName: aws.String("rw"), PolicyDocument: aws.String(rw)}); err != nil {
		t.Fatal(err)
	}
	writerARN := "arn:aws:iam::" + acme + ":role/Writer"
	prov := stscreds.NewAssumeRoleProvider(aliceSTS, writerARN, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = "job-1"
		o.ExternalID = aws.String("ext-1234")
		o.Tags = []ststypes.Tag{{Key: aws.String("team"), Value: aws.String("data")}}
	})
	writer := s3With(g, aws.NewCredentialsCache(prov))
	if _, err := writer.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("w"), Body: strings.NewReader("W")}); err != nil {
		t.Fatalf("role session PUT: %v", err)
	}
	if _, err := writer.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); err != nil {
		t.Fatalf("role session GET: %v", err)
	}
	if _, err := writer.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("role session DELETE (not in the role's policy): %v", err)
	}
	if _, err := writer.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("globex-data"), Key: aws.String("a")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("role session reads another account's bucket: %v", err)
	}
	ci, err := stsClient(g, aws.NewCredentialsCache(prov)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(ci.Arn) != "arn:aws:sts::"+acme+":assumed-role/Writer/job-1" || aws.ToString(ci.Account) != acme {
		t.Fatalf("GetCallerIdentity: %+v %v", ci, err)
	}
	// The role session cannot manage IAM (the role has no iam policy).
	if _, err := iamWith(g, aws.NewCredentialsCache(prov)).ListUsers(ctx, &iam.ListUsersInput{}); apiCode(err) != "AccessDenied" {
		t.Fatalf("role session lists users: %v", err)
	}

	assume := func(c *sts.Client, in *sts.AssumeRoleInput) (*sts.AssumeRoleOutput, error) {
		return c.AssumeRole(ctx, in)
	}
	// Wrong or missing external id, another session name's rules.
	for name, in := range map[string]*sts.AssumeRoleInput{
		"wrong external id": {RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-9999")},
		"no external id":    {RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1")},
		"missing role":      {RoleArn: aws.String("arn:aws:iam::" + acme + ":role/Nope"), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-1234")},
	} {
		if _, err := assume(aliceSTS, in); apiCode(err) != "AccessDenied" {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, c := range map[string]struct {
		in   *sts.AssumeRoleInput
		code string
	}{
		"bad session name": {&sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("a b"), ExternalId: aws.String("ext-1234")}, "ValidationError"},
		"too long":         {&sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-1234"), DurationSeconds: aws.Int32(7200)}, "ValidationError"},
		"too short":        {&sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-1234"), DurationSeconds: aws.Int32(899)}, "ValidationError"},
		"malformed policy": {&sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-1234"), Policy: aws.String(`{"Statement":[{"Effect":"Allow"}]}`)}, "MalformedPolicyDocument"},
		"oversized policy": {&sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-1234"), Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + strings.Repeat("x", 2100) + `"}]}`)}, "PackedPolicyTooLarge"},
	} {
		if _, err := assume(aliceSTS, c.in); apiCode(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}

	// A session policy narrows the session to GetObject.
	ro, err := assume(aliceSTS, &sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("ro"), ExternalId: aws.String("ext-1234"),
		Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(aws.ToString(ro.Credentials.AccessKeyId), "ASIA") || aws.ToString(ro.AssumedRoleUser.Arn) != "arn:aws:sts::"+acme+":assumed-role/Writer/ro" {
		t.Fatalf("AssumeRole answer: %+v %+v", ro.Credentials, ro.AssumedRoleUser)
	}
	roCreds := credentials.NewStaticCredentialsProvider(aws.ToString(ro.Credentials.AccessKeyId), aws.ToString(ro.Credentials.SecretAccessKey), aws.ToString(ro.Credentials.SessionToken))
	roS3 := s3With(g, roCreds)
	if _, err := roS3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); err != nil {
		t.Fatalf("session-policy GET: %v", err)
	}
	if _, err := roS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("ro"), Body: strings.NewReader("x")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("session-policy PUT: %v", err)
	}

	// Managed session policies (PolicyArns) through the credential
	// provider: AmazonS3ReadOnlyAccess narrows the session to reads; with
	// an inline policy allowing PutObject too, the session may do what
	// either allows (and the role allows).
	managed := func(name string, inline *string) *s3.Client {
		return s3With(g, aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(aliceSTS, writerARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName, o.ExternalID, o.Policy = name, aws.String("ext-1234"), inline
			o.PolicyARNs = []ststypes.PolicyDescriptorType{{Arn: aws.String("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}}
		})))
	}
	mro := managed("m-ro", nil)
	if _, err := mro.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); err != nil {
		t.Fatalf("managed session policy GET: %v", err)
	}
	if _, err := mro.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("m"), Body: strings.NewReader("x")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("managed session policy PUT: %v", err)
	}
	mrw := managed("m-rw", aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:PutObject","Resource":"*"}]}`))
	if _, err := mrw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("m"), Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("inline + managed session policies PUT: %v", err)
	}
	if _, err := mrw.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("m")}); err != nil {
		t.Fatalf("inline + managed session policies GET: %v", err)
	}
	if _, err := mrw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("m")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("inline + managed session policies DELETE (neither allows it): %v", err)
	}
	arns := func(as ...string) []ststypes.PolicyDescriptorType {
		var out []ststypes.PolicyDescriptorType
		for _, a := range as {
			out = append(out, ststypes.PolicyDescriptorType{Arn: aws.String(a)})
		}
		return out
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
	}
	for name, c := range map[string]struct {
		arns []ststypes.PolicyDescriptorType
		code string
	}{
		"unknown managed policy":   {arns("arn:aws:iam::" + acme + ":policy/Mine"), "MalformedPolicyDocument"},
		"eleven managed policies":  {arns(eleven...), "ValidationError"},
		"short managed policy ARN": {arns("arn:aws:iam::aws:p"), "ValidationError"},
	} {
		if _, err := assume(aliceSTS, &sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-1234"), PolicyArns: c.arns}); apiCode(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	if out, err := assume(aliceSTS, &sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("x1"), ExternalId: aws.String("ext-1234"), PolicyArns: arns("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}); err != nil || aws.ToInt32(out.PackedPolicySize) < 1 {
		t.Errorf("PackedPolicySize with a managed session policy: %+v %v", out, err)
	}

	// Forged tokens: a flipped character, another session's token, a
	// token on a long-term key.
	tok := aws.ToString(ro.Credentials.SessionToken)
	flipped := tok[:40] + "A" + tok[41:]
	if tok[40] == 'A' {
		flipped = tok[:40] + "B" + tok[41:]
	}
	other, err := assume(aliceSTS, &sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("other"), ExternalId: aws.String("ext-1234")})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]aws.CredentialsProvider{
		"flipped":       credentials.NewStaticCredentialsProvider(aws.ToString(ro.Credentials.AccessKeyId), aws.ToString(ro.Credentials.SecretAccessKey), flipped),
		"swapped":       credentials.NewStaticCredentialsProvider(aws.ToString(ro.Credentials.AccessKeyId), aws.ToString(ro.Credentials.SecretAccessKey), aws.ToString(other.Credentials.SessionToken)),
		"long-term key": credentials.NewStaticCredentialsProvider(aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey), tok),
		"garbage":       credentials.NewStaticCredentialsProvider(aws.ToString(ro.Credentials.AccessKeyId), aws.ToString(ro.Credentials.SecretAccessKey), "not-a-token"),
	} {
		if _, err := s3With(g, c).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); apiCode(err) != "InvalidToken" {
			t.Errorf("S3 with %s token: %v", name, err)
		}
		if _, err := iamWith(g, c).GetUser(ctx, &iam.GetUserInput{}); apiCode(err) != "InvalidClientTokenId" {
			t.Errorf("IAM with %s token: %v", name, err)
		}
	}
	// A temporary key without its token is unknown.
	if _, err := s3With(g, static(aws.ToString(ro.Credentials.AccessKeyId), aws.ToString(ro.Credentials.SecretAccessKey))).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); apiCode(err) != "InvalidAccessKeyId" {
		t.Errorf("temporary key without token: %v", err)
	}
	// Presigned URL with the session token in the query.
	ps, err := s3.NewPresignClient(roS3).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")})
	if err != nil || !strings.Contains(ps.URL, "X-Amz-Security-Token=") {
		t.Fatalf("presign: %v %s", err, ps.URL)
	}
	if resp, err := http.Get(ps.URL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned GET with a session token: %v %v", resp, err)
	}

	// A bucket policy naming one session (no role policy needed) but not
	// another of the same role.
	if _, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("Bare"), AssumeRolePolicyDocument: aws.String(trustAccount(acme))}); err != nil {
		t.Fatal(err)
	}
	bp := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:sts::` + acme + `:assumed-role/Bare/s1"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::acme-data/*"}]}`
	if _, err := rootS3.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("acme-data"), Policy: aws.String(bp)}); err != nil {
		t.Fatal(err)
	}
	rootSTS := stsClient(g, rootCreds)
	bare := func(session string) error {
		out, err := assume(rootSTS, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::" + acme + ":role/Bare"), RoleSessionName: aws.String(session)})
		if err != nil {
			t.Fatal(err)
		}
		c := credentials.NewStaticCredentialsProvider(aws.ToString(out.Credentials.AccessKeyId), aws.ToString(out.Credentials.SecretAccessKey), aws.ToString(out.Credentials.SessionToken))
		_, err = s3With(g, c).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")})
		return err
	}
	if err := bare("s1"); err != nil {
		t.Fatalf("session named by the bucket policy: %v", err)
	}
	if err := bare("s2"); apiCode(err) != "AccessDenied" {
		t.Fatalf("another session of the role: %v", err)
	}

	// Cross account: globex's role trusts acme (the account); acme's bob
	// needs an identity policy allowing sts:AssumeRole on it.
	if _, err := root2.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("Partner"), AssumeRolePolicyDocument: aws.String(trustAccount(acme))}); err != nil {
		t.Fatal(err)
	}
	if _, err := root2.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("Partner"), PolicyArn: aws.String("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String("bob")}); err != nil {
		t.Fatal(err)
	}
	bk, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String("bob")})
	if err != nil {
		t.Fatal(err)
	}
	bobSTS := stsClient(g, static(aws.ToString(bk.AccessKey.AccessKeyId), aws.ToString(bk.AccessKey.SecretAccessKey)))
	partner := &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::" + globex + ":role/Partner"), RoleSessionName: aws.String("bob")}
	if _, err := assume(bobSTS, partner); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob without an identity policy assumes globex's role: %v", err)
	}
	if _, err := root.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String("bob"), PolicyName: aws.String("assume"),
		PolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:AssumeRole","Resource":"arn:aws:iam::` + globex + `:role/Partner"}]}`)}); err != nil {
		t.Fatal(err)
	}
	pout, err := assume(bobSTS, partner)
	if err != nil {
		t.Fatalf("bob with an identity policy: %v", err)
	}
	pS3 := s3With(g, credentials.NewStaticCredentialsProvider(aws.ToString(pout.Credentials.AccessKeyId), aws.ToString(pout.Credentials.SecretAccessKey), aws.ToString(pout.Credentials.SessionToken)))
	if _, err := pS3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("globex-data"), Key: aws.String("a")}); err != nil {
		t.Fatalf("partner session reads globex's bucket: %v", err)
	}
	if _, err := pS3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("partner session (a globex identity) reads acme's bucket: %v", err)
	}
	// globex cannot assume acme's roles.
	if _, err := assume(stsClient(g, static("GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret")), &sts.AssumeRoleInput{RoleArn: aws.String(writerARN), RoleSessionName: aws.String("gx"), ExternalId: aws.String("ext-1234")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("globex assumes acme's Writer: %v", err)
	}

	// GetSessionToken: alice's own (empty) permissions, no IAM.
	st, err := aliceSTS.GetSessionToken(ctx, &sts.GetSessionTokenInput{DurationSeconds: aws.Int32(900)})
	if err != nil {
		t.Fatal(err)
	}
	stCreds := credentials.NewStaticCredentialsProvider(aws.ToString(st.Credentials.AccessKeyId), aws.ToString(st.Credentials.SecretAccessKey), aws.ToString(st.Credentials.SessionToken))
	if ci, err := stsClient(g, stCreds).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err != nil || aws.ToString(ci.Arn) != "arn:aws:iam::"+acme+":user/alice" {
		t.Fatalf("GetSessionToken identity: %+v %v", ci, err)
	}
	if _, err := iamWith(g, stCreds).GetUser(ctx, &iam.GetUserInput{}); apiCode(err) != "AccessDenied" {
		t.Fatalf("GetSessionToken credentials call IAM: %v", err)
	}
	if _, err := stsClient(g, stCreds).GetSessionToken(ctx, &sts.GetSessionTokenInput{}); apiCode(err) != "AccessDenied" {
		t.Fatalf("GetSessionToken with temporary credentials: %v", err)
	}

	// Condition keys reach identity and session policies on actions
	// without a bucket (CreateBucket): a session policy conditioned on
	// aws:SourceIp allows it from 127.0.0.1 only.
	if _, err := root.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("Bare"), PolicyName: aws.String("mk"),
		PolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:CreateBucket","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}]}`)}); err != nil {
		t.Fatal(err)
	}
	for pol, want := range map[string]string{
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`: "",
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"true"}}}]}`:  "AccessDenied",
	} {
		out, err := assume(rootSTS, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::" + acme + ":role/Bare"), RoleSessionName: aws.String("mk"), Policy: aws.String(pol)})
		if err != nil {
			t.Fatal(err)
		}
		c := credentials.NewStaticCredentialsProvider(aws.ToString(out.Credentials.AccessKeyId), aws.ToString(out.Credentials.SecretAccessKey), aws.ToString(out.Credentials.SessionToken))
		_, err = s3With(g, c).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("acme-made-" + strings.ToLower(want) + "x")})
		if apiCode(err) != want {
			t.Errorf("CreateBucket with session policy %s: %v, want %q", pol, err, want)
		}
	}

	// Deleting the role ends its sessions at once.
	if _, err := root.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String("Writer"), PolicyName: aws.String("rw")}); err != nil {
		t.Fatal(err)
	}
	if _, err := roS3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("session after its role lost its policy: %v", err)
	}
	if _, err := root.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("Writer")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("Writer"), AssumeRolePolicyDocument: aws.String(trust)}); err != nil {
		t.Fatal(err)
	}
	if _, err := roS3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); apiCode(err) != "InvalidToken" {
		t.Fatalf("session of a deleted role (recreated under its name): %v", err)
	}
}
