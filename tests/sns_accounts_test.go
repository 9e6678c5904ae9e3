package tests

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// snsAs sends an SNS query-protocol POST signed by aws-sdk-go-v2's SigV4
// signer with creds (a session's token included), returning status and body.
func snsAs(t *testing.T, g *Gateway, creds aws.CredentialsProvider, form url.Values) (int, string) {
	t.Helper()
	c, err := creds.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body := form.Encode()
	r, err := http.NewRequest("POST", g.Endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sum := sha256Hex(body)
	r.Header.Set("X-Amz-Content-Sha256", sum)
	if err := v4.NewSigner().SignHTTP(context.Background(), c, r, sum, "sns", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

// accountUser creates an IAM user with keys through the root's IAM client
// and, when policy is not empty, gives it that inline policy.
func accountUser(t *testing.T, root *iam.Client, name, policy string) aws.CredentialsProvider {
	t.Helper()
	ctx := context.Background()
	if _, err := root.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	k, err := root.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if policy != "" {
		if _, err := root.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String(name), PolicyName: aws.String("p"), PolicyDocument: aws.String(policy)}); err != nil {
			t.Fatal(err)
		}
	}
	return static(aws.ToString(k.AccessKey.AccessKeyId), aws.ToString(k.AccessKey.SecretAccessKey))
}

// TestSNSAccountTopics: topics created by an IAM account's users and role
// sessions belong to the account (ARN arn:aws:sns:<zg>:<account>:<name>,
// owner the account id): every user of the account whose identity policy
// allows manages them, one without is refused, another account's user
// needs the topic policy and its own identity policy, users outside
// accounts keep their own namespace; and a bucket notification of an
// account bucket to an account topic delivers.
func TestSNSAccountTopics(t *testing.T) {
	ctx := context.Background()
	rv := newReceiver(t)
	g := StartGateway(t, "--notif-scan-interval", "1s")
	acme := newAccount(t, g, "acme", "ACMEROOTKEY000000001")
	globex := newAccount(t, g, "globex", "GLOBEXROOTKEY0000001")
	rootCreds := static("ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	root := iamClient(g, "ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	root2 := iamClient(g, "GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret")

	a := accountUser(t, root, "a", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sns:CreateTopic","Resource":"*"}]}`)
	b := accountUser(t, root, "b", `{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Action":"sns:*","Resource":"*"},
	 {"Effect":"Allow","Action":["s3:PutBucketNotification","s3:PutObject"],"Resource":["arn:aws:s3:::acme-bkt","arn:aws:s3:::acme-bkt/*"]}]}`)
	c := accountUser(t, root, "c", "")
	d := accountUser(t, root2, "d", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sns:*","Resource":"*"}]}`)
	e := accountUser(t, root2, "e", "")
	dARN, eARN := "arn:aws:iam::"+globex+":user/d", "arn:aws:iam::"+globex+":user/e"

	arn := "arn:aws:sns:default:" + acme + ":events"
	st, body := snsAs(t, g, a, topicForm("CreateTopic", "Name", "events"))
	if st != 200 || !strings.Contains(body, "<TopicArn>"+arn+"</TopicArn>") {
		t.Fatalf("a creates events: %d %s", st, body)
	}
	get := func(who aws.CredentialsProvider, arn string) (int, string) {
		return snsAs(t, g, who, topicForm("GetTopicAttributes", "TopicArn", arn))
	}
	// a's identity policy allows creating only.
	if st, body := get(a, arn); st != 403 || !strings.Contains(body, "AuthorizationError") {
		t.Fatalf("a reads without sns:GetTopicAttributes: %d %s", st, body)
	}
	// b manages the account's topic; its owner is the account.
	if st, body := get(b, arn); st != 200 || !strings.Contains(body, "<key>User</key><value>"+acme+"</value>") {
		t.Fatalf("b reads events: %d %s", st, body)
	}
	if st, body := snsAs(t, g, b, topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "OpaqueData", "AttributeValue", "by-b")); st != 200 {
		t.Fatalf("b sets an attribute: %d %s", st, body)
	}
	if st, body := snsAs(t, g, b, topicForm("ListTopics")); st != 200 || !strings.Contains(body, arn) {
		t.Fatalf("b lists the account's topics: %d %s", st, body)
	}
	// The root always may.
	if st, body := get(rootCreds, arn); st != 200 || !strings.Contains(body, "by-b") {
		t.Fatalf("root reads events: %d %s", st, body)
	}
	// c has no identity policy: nothing, not even on its account's topic.
	for _, f := range []url.Values{
		topicForm("CreateTopic", "Name", "c-topic"),
		topicForm("CreateTopic", "Name", "events"),
		topicForm("GetTopicAttributes", "TopicArn", arn),
		topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "OpaqueData", "AttributeValue", "by-c"),
		topicForm("DeleteTopic", "TopicArn", arn),
		topicForm("ListTopics"),
	} {
		if st, body := snsAs(t, g, c, f); st != 403 || !strings.Contains(body, "AuthorizationError") {
			t.Errorf("c %s: %d %s", f.Get("Action"), st, body)
		}
	}
	if _, body := get(rootCreds, arn); !strings.Contains(body, "by-b") {
		t.Fatalf("a refused write changed the topic: %s", body)
	}

	// A role session of the account: its topics are the account's too.
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::` + acme + `:user/b"},"Action":"sts:AssumeRole"}]}`
	if _, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("notifier"), AssumeRolePolicyDocument: aws.String(trust)}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("notifier"), PolicyName: aws.String("sns"),
		PolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sns:*","Resource":"*"}]}`)}); err != nil {
		t.Fatal(err)
	}
	sess := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient(g, b), "arn:aws:iam::"+acme+":role/notifier",
		func(o *stscreds.AssumeRoleOptions) { o.RoleSessionName = "job" }))
	sarn := "arn:aws:sns:default:" + acme + ":from-role"
	if st, body := snsAs(t, g, sess, topicForm("CreateTopic", "Name", "from-role")); st != 200 || !strings.Contains(body, sarn) {
		t.Fatalf("role session creates a topic: %d %s", st, body)
	}
	if st, body := get(sess, arn); st != 200 {
		t.Fatalf("role session reads events: %d %s", st, body)
	}
	if st, body := get(b, sarn); st != 200 || !strings.Contains(body, "<key>User</key><value>"+acme+"</value>") {
		t.Fatalf("b reads the session's topic: %d %s", st, body)
	}

	// Another account: its identity policy alone is not enough, nor is the
	// topic policy alone; both together are.
	if st, body := get(d, arn); st != 403 {
		t.Fatalf("d without topic policy: %d %s", st, body)
	}
	if st, body := snsAs(t, g, d, topicForm("ListTopics")); st != 200 || strings.Contains(body, acme) {
		t.Fatalf("d lists acme's topics: %d %s", st, body)
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["` + dARN + `","` + eARN + `"]},"Action":["sns:GetTopicAttributes"],"Resource":"` + arn + `"}]}`
	if st, body := snsAs(t, g, b, topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "Policy", "AttributeValue", policy)); st != 200 {
		t.Fatalf("b sets the topic policy: %d %s", st, body)
	}
	if st, body := get(d, arn); st != 200 {
		t.Fatalf("d with topic policy and identity policy: %d %s", st, body)
	}
	if st, body := get(e, arn); st != 403 {
		t.Fatalf("e with topic policy, without identity policy: %d %s", st, body)
	}
	// The topic policy grants reading only.
	if st, body := snsAs(t, g, d, topicForm("DeleteTopic", "TopicArn", arn)); st != 403 {
		t.Fatalf("d deletes: %d %s", st, body)
	}
	// d's own topic of that name lives in globex's namespace.
	if st, body := snsAs(t, g, d, topicForm("CreateTopic", "Name", "events")); st != 200 || !strings.Contains(body, "arn:aws:sns:default:"+globex+":events") {
		t.Fatalf("d creates its own events: %d %s", st, body)
	}

	// A user outside accounts keeps the empty namespace and its own topics.
	if st, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, g.AccessKey, g.SecretKey, "events", nil); st != 200 || !strings.Contains(body, "arn:aws:sns:default::events") {
		t.Fatalf("admin creates events: %d %s", st, body)
	}
	plain := createUser(t, g, "plain")
	if st, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, plain.ak, plain.sk, "mine", nil); st != 200 || !strings.Contains(body, "arn:aws:sns:default::mine") {
		t.Fatalf("plain user creates a topic: %d %s", st, body)
	}
	if st, body := get(static(plain.ak, plain.sk), arn); st != 403 {
		t.Fatalf("plain user reads acme's topic: %d %s", st, body)
	}
	if st, body := get(b, "arn:aws:sns:default::mine"); st != 403 {
		t.Fatalf("b reads the plain user's topic: %d %s", st, body)
	}

	// Delivery: b attaches the account topic to the account's bucket.
	rootS3 := sdkClient(g, "ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	if _, err := rootS3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("acme-bkt")}); err != nil {
		t.Fatal(err)
	}
	if st, body := snsAs(t, g, b, topicForm("CreateTopic", "Name", "deliver",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", rv.srv.URL,
		"Attributes.entry.2.key", "persistent", "Attributes.entry.2.value", "true")); st != 200 {
		t.Fatalf("b creates deliver: %d %s", st, body)
	}
	bS3 := s3With(g, b)
	if _, err := bS3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String("acme-bkt"), NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
			Id: aws.String("n"), TopicArn: aws.String("arn:aws:sns:default:" + acme + ":deliver"), Events: []types.Event{"s3:ObjectCreated:*"}}}}}); err != nil {
		t.Fatalf("b puts the notification: %v", err)
	}
	// Another account's user may not attach the account's topic.
	if _, err := sdkClient(g, "GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret").CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("globex-bkt")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3With(g, static("GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret")).PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String("globex-bkt"), NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
			Id: aws.String("n"), TopicArn: aws.String("arn:aws:sns:default:" + acme + ":deliver"), Events: []types.Event{"s3:ObjectCreated:*"}}}}}); apiCode(err) != "AccessDenied" {
		t.Fatalf("globex attaches acme's topic: %v", err)
	}
	if _, err := bS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-bkt"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		recs := rv.snapshot()
		if len(recs) > 0 {
			if k, _ := field(recs[0], "s3", "object", "key").(string); k != "k" || len(recs) != 1 {
				t.Fatalf("events: %v", recs)
			}
			if b, _ := field(recs[0], "s3", "bucket", "name").(string); b != "acme-bkt" {
				t.Fatalf("event bucket %q", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no event delivered")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Admins address an account's topic as <account-id>:<name>.
	if out, err := g.Admin("topic", "get", "--topic", acme+":deliver"); err != nil || !strings.Contains(out, `"owner": "`+acme+`"`) {
		t.Fatalf("admin topic get: %s %v", out, err)
	}

	// b deletes the account's topic (a's creation).
	if st, body := snsAs(t, g, b, topicForm("DeleteTopic", "TopicArn", arn)); st != 200 {
		t.Fatalf("b deletes events: %d %s", st, body)
	}
	if st, body := get(rootCreds, arn); st != 404 {
		t.Fatalf("events after delete: %d %s", st, body)
	}
}
