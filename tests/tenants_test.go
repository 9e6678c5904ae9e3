package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// tenantUser is a user of tenant ("" for none) created through `cairn
// admin`, with the SDK client and raw signer of its keys.
type tenantUser struct {
	principal
	tenant string
	c      *s3.Client
}

// ref is how another tenant's client names this user's bucket b in a
// path-style request: "tenant:bucket" (":bucket" for the empty tenant).
func (u tenantUser) ref(b string) string { return u.tenant + ":" + b }

func (u tenantUser) topicARN(name string) string {
	return "arn:aws:sns:default:" + u.tenant + ":" + name
}

// createTenantUsers makes "alice" in the empty tenant, in t1 (radosgw-admin's
// --tenant form) and in t2 (the "tenant$uid" form).
func createTenantUsers(t *testing.T, g *Gateway) []tenantUser {
	t.Helper()
	var out []tenantUser
	for _, tc := range []struct {
		tenant string
		args   []string
	}{
		{"", []string{"--uid", "alice"}},
		{"t1", []string{"--tenant", "t1", "--uid", "alice"}},
		{"t2", []string{"--uid", "t2$alice"}},
	} {
		tag := tc.tenant
		if tag == "" {
			tag = "none"
		}
		p := principal{name: tag + "-alice", ak: strings.ToUpper(tag) + "ALICEKEY00000000", sk: tag + "-alice-secret-000000000000000000000000"}
		out1, err := g.Admin(append(append([]string{"user", "create"}, tc.args...), "--access-key", p.ak, "--secret", p.sk)...)
		if err != nil {
			t.Fatal(err)
		}
		wantID := "alice"
		if tc.tenant != "" {
			wantID = tc.tenant + "$alice"
		}
		if id := jsonField(t, out1, "user_id"); id != wantID {
			t.Fatalf("user create %v: id %q, want %q", tc.args, id, wantID)
		}
		out = append(out, tenantUser{principal: p, tenant: tc.tenant, c: sdkClient(g, p.ak, p.sk)})
	}
	return out
}

// TestTenantIsolation: three users named alice, in the empty tenant, t1 and
// t2, each with a bucket "shared" and a topic "events" of the same names.
// Every user's requests for "shared" reach its own tenant's bucket; for
// every ordered pair, the other's bucket addressed as "tenant:shared" (the
// SDK sends it URL-encoded, "tenant%3Ashared") refuses every API — list,
// get, put, delete, ACLs, policy, notifications — and the other's topic
// refuses every SNS action and cannot be attached; until a bucket policy
// naming "arn:aws:iam::<tenant>:user/alice" grants a read.
func TestTenantIsolation(t *testing.T) { tenantIsolationProbe(t, StartGateway(t)) }

func tenantIsolationProbe(t *testing.T, g *Gateway) {
	ctx := context.Background()
	users := createTenantUsers(t, g)
	const bkt = "shared"
	for _, u := range users {
		if _, err := u.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bkt)}); err != nil {
			t.Fatalf("%s CreateBucket: %v", u.name, err)
		}
		if _, err := u.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bkt), Key: aws.String("k"), Body: strings.NewReader("data of " + u.name)}); err != nil {
			t.Fatalf("%s PutObject: %v", u.name, err)
		}
		r := u.sns(t, g, topicForm("CreateTopic", "Name", "events",
			"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "http://127.0.0.1:9",
			"Attributes.entry.2.key", "persistent", "Attributes.entry.2.value", "true"))
		want(t, "CreateTopic "+u.name, r, 200, "")
		if !strings.Contains(r.body, "<TopicArn>"+u.topicARN("events")+"</TopicArn>") {
			t.Errorf("%s CreateTopic: ARN not in its tenant: %s", u.name, r.body)
		}
		// Its own topic attaches to its own bucket.
		if _, err := u.c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
			Bucket: aws.String(bkt), NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
				Id: aws.String("own"), TopicArn: aws.String(u.topicARN("events")), Events: []types.Event{"s3:ObjectCreated:*"}}}}}); err != nil {
			t.Fatalf("%s own notification: %v", u.name, err)
		}
	}

	for _, u := range users {
		// Its own bucket, by its bare name and by its explicit tenant.
		for _, name := range []string{bkt, u.ref(bkt)} {
			out, err := u.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String("k")})
			if err != nil {
				t.Fatalf("%s GetObject %s: %v", u.name, name, err)
			}
			body, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if string(body) != "data of "+u.name {
				t.Errorf("%s GetObject %s: %q", u.name, name, body)
			}
		}
		lb, err := u.c.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil || len(lb.Buckets) != 1 || aws.ToString(lb.Buckets[0].Name) != bkt {
			t.Errorf("%s ListBuckets: %+v %v", u.name, lb, err)
		}
		lt := u.sns(t, g, topicForm("ListTopics"))
		if strings.Count(lt.body, "<TopicArn>") != 1 || !strings.Contains(lt.body, u.topicARN("events")) {
			t.Errorf("%s ListTopics shows other tenants' topics: %s", u.name, lt.body)
		}
	}

	for _, a := range users {
		for _, b := range users {
			if a.tenant == b.tenant {
				continue
			}
			pair := a.name + " on " + b.name + "'s "
			other := aws.String(b.ref(bkt))
			denied := func(what string, err error) {
				t.Helper()
				if code := apiCode(err); code != "AccessDenied" && code != "Forbidden" {
					t.Errorf("%s%s: %v, want AccessDenied", pair, what, err)
				}
			}
			_, err := a.c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: other})
			denied("ListObjectsV2", err)
			_, err = a.c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: other})
			denied("ListObjectVersions", err)
			_, err = a.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: other})
			denied("HeadBucket", err)
			_, err = a.c.GetObject(ctx, &s3.GetObjectInput{Bucket: other, Key: aws.String("k")})
			denied("GetObject", err)
			_, err = a.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: other, Key: aws.String("k")})
			denied("HeadObject", err)
			_, err = a.c.PutObject(ctx, &s3.PutObjectInput{Bucket: other, Key: aws.String("k"), Body: strings.NewReader("overwrite")})
			denied("PutObject", err)
			_, err = a.c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bkt), Key: aws.String("stolen"), CopySource: aws.String(b.ref(bkt) + "/k")})
			denied("CopyObject from", err)
			_, err = a.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: other, Key: aws.String("k")})
			denied("DeleteObject", err)
			_, err = a.c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: other})
			denied("GetBucketAcl", err)
			_, err = a.c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: other, ACL: types.BucketCannedACLPublicRead})
			denied("PutBucketAcl", err)
			_, err = a.c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: other, Key: aws.String("k")})
			denied("GetObjectAcl", err)
			_, err = a.c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: other, Key: aws.String("k"), ACL: types.ObjectCannedACLPublicRead})
			denied("PutObjectAcl", err)
			_, err = a.c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: other})
			denied("GetBucketPolicy", err)
			_, err = a.c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: other, Policy: aws.String(
				`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::shared/*"}]}`)})
			denied("PutBucketPolicy", err)
			_, err = a.c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: other})
			denied("DeleteBucketPolicy", err)
			_, err = a.c.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: other})
			denied("GetBucketNotificationConfiguration", err)
			_, err = a.c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: other,
				NotificationConfiguration: &types.NotificationConfiguration{}})
			denied("PutBucketNotificationConfiguration", err)
			_, err = a.c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: other})
			denied("DeleteBucket", err)
			// DeleteObjects answers per key.
			if dout, err := a.c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: other, Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("k")}}}}); err == nil &&
				(len(dout.Deleted) != 0 || len(dout.Errors) != 1 || aws.ToString(dout.Errors[0].Code) != "AccessDenied") {
				t.Errorf("%sDeleteObjects: deleted %d, errors %+v", pair, len(dout.Deleted), dout.Errors)
			} else if err != nil {
				denied("DeleteObjects", err)
			}
			_, err = a.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: other, Key: aws.String("mp")})
			denied("CreateMultipartUpload", err)
			_, err = a.c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: other})
			denied("ListMultipartUploads", err)
			_, err = a.c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: other})
			denied("GetBucketVersioning", err)
			_, err = a.c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: other, VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
			denied("PutBucketVersioning", err)
			_, err = a.c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: other})
			denied("GetBucketTagging", err)
			_, err = a.c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: other, Key: aws.String("k")})
			denied("GetObjectTagging", err)
			_, err = a.c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: other, LifecycleConfiguration: &types.BucketLifecycleConfiguration{
				Rules: []types.LifecycleRule{{ID: aws.String("x"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}}}}})
			denied("PutBucketLifecycleConfiguration", err)
			_, err = a.c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: other})
			denied("GetBucketLocation", err)
			// A presigned URL of a's for b's object is no better.
			ps, err := s3.NewPresignClient(a.c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: other, Key: aws.String("k")})
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.Get(ps.URL)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 403 {
				t.Errorf("%spresigned GET: %d", pair, res.StatusCode)
			}
			// Its own bucket may not send events to the other's topic.
			_, err = a.c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
				Bucket: aws.String(bkt), NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
					Id: aws.String("theirs"), TopicArn: aws.String(b.topicARN("events")), Events: []types.Event{"s3:ObjectCreated:*"}}}}})
			denied("topic in a notification", err)
			// Nor name a topic the other tenant does not have: the answer
			// does not tell the two apart.
			_, err = a.c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
				Bucket: aws.String(bkt), NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
					Id: aws.String("none"), TopicArn: aws.String(b.topicARN("nosuchtopic")), Events: []types.Event{"s3:ObjectCreated:*"}}}}})
			denied("missing topic in a notification", err)
			// Creating a bucket in another tenant is refused.
			_, err = a.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b.ref("newbucket"))})
			denied("CreateBucket", err)
			for _, f := range []url.Values{
				topicForm("GetTopicAttributes", "TopicArn", b.topicARN("events")),
				topicForm("GetTopic", "TopicArn", b.topicARN("events")),
				topicForm("SetTopicAttributes", "TopicArn", b.topicARN("events"), "AttributeName", "push-endpoint", "AttributeValue", "http://127.0.0.1:10"),
				topicForm("DeleteTopic", "TopicArn", b.topicARN("events")),
				topicForm("DeleteTopic", "TopicArn", b.topicARN("nosuchtopic")),
				topicForm("GetTopicAttributes", "TopicArn", b.topicARN("nosuchtopic")),
				topicForm("SetTopicAttributes", "TopicArn", b.topicARN("nosuchtopic"), "AttributeName", "push-endpoint", "AttributeValue", "http://127.0.0.1:10"),
			} {
				want(t, pair+f.Get("Action")+" topic", a.sns(t, g, f), 403, "AuthorizationError")
			}
			// The bare name is a's own topic, never b's.
			r := a.sns(t, g, topicForm("CreateTopic", "Name", "events",
				"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "http://127.0.0.1:9",
				"Attributes.entry.2.key", "persistent", "Attributes.entry.2.value", "true"))
			want(t, pair+"CreateTopic of the same name", r, 200, "")
			if !strings.Contains(r.body, a.topicARN("events")) {
				t.Errorf("%sCreateTopic answered another tenant's ARN: %s", pair, r.body)
			}
		}
	}
	// Nothing changed: every bucket holds its own object only, every topic
	// its own endpoint, every notification its own topic.
	for _, u := range users {
		out, err := u.c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bkt)})
		if err != nil || len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "k" || aws.ToString(out.Name) != bkt {
			t.Errorf("%s's bucket after the probes: %+v %v", u.name, out, err)
		}
		r := u.sns(t, g, topicForm("GetTopicAttributes", "TopicArn", u.topicARN("events")))
		if r.status != 200 || !strings.Contains(r.body, "http://127.0.0.1:9<") {
			t.Errorf("%s's topic after the probes: %d %s", u.name, r.status, r.body)
		}
		nc, err := u.c.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(bkt)})
		if err != nil || len(nc.TopicConfigurations) != 1 || aws.ToString(nc.TopicConfigurations[0].TopicArn) != u.topicARN("events") {
			t.Errorf("%s's notifications after the probes: %+v %v", u.name, nc, err)
		}
	}

	// A grant opens exactly what it names: t1's policy lets t2's alice read
	// (its bare "arn:aws:s3:::shared/*" is t1's bucket), not the empty
	// tenant's alice.
	none, t1, t2 := users[0], users[1], users[2]
	if _, err := t1.c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bkt), Policy: aws.String(
		`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::t2:user/alice"},"Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::shared","arn:aws:s3:::shared/*"]}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := t1.c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bkt), Policy: aws.String(
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3::t2:shared/*"}]}`)}); apiCode(err) != "MalformedPolicy" {
		t.Errorf("t1's policy naming t2's bucket: %v, want MalformedPolicy", err)
	}
	out, err := t2.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("t1:shared"), Key: aws.String("k")})
	if err != nil {
		t.Fatalf("t2 alice reads t1:shared under the grant: %v", err)
	}
	body, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(body) != "data of t1-alice" {
		t.Errorf("t2 alice read %q from t1:shared", body)
	}
	if _, err := t2.c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("t1:shared")}); err != nil {
		t.Errorf("t2 alice lists t1:shared under the grant: %v", err)
	}
	if _, err := t2.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("t1:shared"), Key: aws.String("k2"), Body: strings.NewReader("x")}); apiCode(err) != "AccessDenied" {
		t.Errorf("t2 alice writes t1:shared with a read grant: %v", err)
	}
	if _, err := none.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("t1:shared"), Key: aws.String("k")}); apiCode(err) != "AccessDenied" {
		t.Errorf("untenanted alice reads t1:shared under a grant to t2's alice: %v", err)
	}
	// An ACL grant to the canonical id "t2$alice" opens that object to her
	// alone (the bucket policy above does not name acl-k's reader twice).
	if _, err := t1.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bkt), Key: aws.String("acl-k"), Body: strings.NewReader("acl"),
		GrantRead: aws.String(`id="t2$alice"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := t1.c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bkt), Policy: aws.String(
		`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::t2:user/alice"},"Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::shared"]}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("t1:shared"), Key: aws.String("acl-k")}); err != nil {
		t.Errorf("t2 alice reads t1:shared/acl-k under the ACL grant: %v", err)
	}
	if _, err := t2.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("t1:shared"), Key: aws.String("k")}); apiCode(err) != "AccessDenied" {
		t.Errorf("t2 alice reads t1:shared/k with neither grant: %v", err)
	}
	if _, err := none.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("t1:shared"), Key: aws.String("acl-k")}); apiCode(err) != "AccessDenied" {
		t.Errorf("untenanted alice reads t1:shared/acl-k under t2 alice's grant: %v", err)
	}
	if _, err := t1.c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bkt), Policy: aws.String(
		`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::t2:user/alice"},"Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::shared","arn:aws:s3:::shared/*"]}]}`)}); err != nil {
		t.Fatal(err)
	}
	// The raw forms: "t1:shared" and "t1%3Ashared" in the path.
	for _, path := range []string{"/t1:shared/k", "/t1%3Ashared/k"} {
		r := t2.do(t, g, http.MethodGet, path, "")
		want(t, "t2 alice GET "+path, r, 200, "")
		if r.body != "data of t1-alice" {
			t.Errorf("GET %s: %q", path, r.body)
		}
		want(t, "untenanted alice GET "+path, none.do(t, g, http.MethodGet, path, ""), 403, "AccessDenied")
		// SigV2, as RGW's multitenancy examples sign it (boto 2).
		v2 := t2.principal
		v2.v2 = true
		if r := v2.do(t, g, http.MethodGet, path, ""); r.status != 200 || r.body != "data of t1-alice" {
			t.Errorf("t2 alice GET %s signed with SigV2: %d %s", path, r.status, r.body)
		}
	}
	// A tenant principal ("arn:aws:iam::t2:root", RGW's) names every user
	// of t2: a second t2 user reads too, nobody of another tenant does.
	if _, err := t1.c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bkt), Policy: aws.String(
		`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::t2:root"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::shared/*"}]}`)}); err != nil {
		t.Fatal(err)
	}
	bob := principal{name: "t2-bob", ak: "T2BOBKEY0000000000001", sk: "t2-bob-secret-000000000000000000000000"}
	if _, err := g.Admin("user", "create", "--tenant", "t2", "--uid", "bob", "--access-key", bob.ak, "--secret", bob.sk); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		name string
		c    *s3.Client
		ok   bool
	}{{"t2 alice", t2.c, true}, {"t2 bob", sdkClient(g, bob.ak, bob.sk), true}, {"untenanted alice", none.c, false}} {
		_, err := u.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("t1:shared"), Key: aws.String("k")})
		if u.ok && err != nil || !u.ok && apiCode(err) != "AccessDenied" {
			t.Errorf("%s reads t1:shared under a grant to tenant t2: %v", u.name, err)
		}
	}
	// A tenant name that cannot be one is no bucket.
	want(t, "bad tenant", t2.do(t, g, http.MethodGet, "/t.1:shared/k", ""), 400, "InvalidBucketName")
}

// TestTenantAdmin: `cairn admin` with radosgw-admin's tenant forms: user
// info/list/rm, bucket stats, reshard and topic stats per tenant.
func TestTenantAdmin(t *testing.T) {
	g := StartGateway(t, "--bucket-index-shards", "2")
	ctx := context.Background()
	users := createTenantUsers(t, g)
	for _, u := range users {
		if _, err := u.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("adm")}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b", "c"}[:len(u.tenant)+1] {
			if _, err := u.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("adm"), Key: aws.String(k), Body: strings.NewReader(k)}); err != nil {
				t.Fatal(err)
			}
		}
		want(t, "CreateTopic", u.sns(t, g, topicForm("CreateTopic", "Name", "events",
			"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "http://127.0.0.1:9",
			"Attributes.entry.2.key", "persistent", "Attributes.entry.2.value", "true")), 200, "")
	}
	admin := func(args ...string) string {
		t.Helper()
		out, err := g.Admin(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Bad tenant forms are refused and create nothing.
	for _, args := range [][]string{{"--tenant", "bad.t", "--uid", "bob"}, {"--uid", "$bob"}, {"--uid", "t1$"},
		{"--uid", "t1$b$ob"}, {"--uid", "t:1$bob"}, {"--tenant", "t1", "--uid", "t2$bob"}} {
		if out, err := g.Admin(append([]string{"user", "create"}, args...)...); err == nil {
			t.Errorf("user create %v: accepted: %s", args, out)
		}
	}
	var ids []string
	if err := json.Unmarshal([]byte(admin("user", "list", "--tenant", "t1")), &ids); err != nil || len(ids) != 1 || ids[0] != "t1$alice" {
		t.Errorf("user list --tenant t1: %v %v", ids, err)
	}
	if err := json.Unmarshal([]byte(admin("user", "list")), &ids); err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	if strings.Contains(strings.Join(ids, ","), "bob") || !strings.Contains(strings.Join(ids, ","), "alice,t1$alice,t2$alice") {
		t.Errorf("user list: %v", ids)
	}
	for _, args := range [][]string{{"--tenant", "t2", "--uid", "alice"}, {"--uid", "t2$alice"}} {
		if id := jsonField(t, admin(append([]string{"user", "info"}, args...)...), "user_id"); id != "t2$alice" {
			t.Errorf("user info %v: %s", args, id)
		}
	}
	if _, err := g.Admin("user", "info", "--tenant", "t3", "--uid", "alice"); err == nil {
		t.Error("user info of t3$alice: found")
	}
	if _, err := g.Admin("user", "info", "--tenant", "t1", "--uid", "t2$alice"); err == nil {
		t.Error("user info naming two tenants: accepted")
	}
	// Bucket stats of each tenant's adm: its own object count.
	for i, args := range [][]string{{"--bucket", "adm"}, {"--bucket", "t1/adm"}, {"--tenant", "t2", "--bucket", "adm"}} {
		out := admin(append([]string{"bucket", "stats"}, args...)...)
		var st struct {
			Bucket, Tenant string
			NumObjects     int `json:"num_objects"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil || st.Bucket != "adm" || st.Tenant != users[i].tenant || st.NumObjects != len(users[i].tenant)+1 {
			t.Errorf("bucket stats %v: %+v %v\n%s", args, st, err, out)
		}
	}
	// bucket create puts a bucket in its owner's tenant.
	if out := admin("bucket", "create", "--uid", "t2$alice", "--bucket", "pre", "--num-shards", "3"); jsonField(t, out, "name") != "t2/pre" {
		t.Errorf("bucket create for t2$alice: %s", out)
	}
	if _, err := g.Admin("bucket", "create", "--uid", "t2$alice", "--bucket", "t1/pre"); err == nil {
		t.Error("bucket create in another tenant than its owner's: accepted")
	}
	// Resharding t1's bucket leaves the others alone.
	admin("bucket", "reshard", "--tenant", "t1", "--bucket", "adm", "--num-shards", "5")
	for _, tc := range []struct {
		bucket string
		shards string
	}{{"adm", `"num_shards": 2`}, {"t1/adm", `"num_shards": 5`}, {"t2/adm", `"num_shards": 2`}} {
		if out := admin("bucket", "stats", "--bucket", tc.bucket); !strings.Contains(out, tc.shards) {
			t.Errorf("after resharding t1/adm, %s: %s", tc.bucket, out)
		}
	}
	// Done, so nothing in progress; a bucket missing in a tenant is not.
	if _, err := g.Admin("reshard", "status", "--bucket", "t1/adm"); err == nil || !strings.Contains(err.Error(), "NoSuchReshard") {
		t.Errorf("reshard status of t1/adm: %v", err)
	}
	if _, err := g.Admin("reshard", "status", "--tenant", "t3", "--bucket", "adm"); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("reshard status of t3/adm: %v", err)
	}
	// Topics per tenant.
	for _, tc := range []struct {
		tenant string
		args   []string
	}{{"", []string{"--topic", "events"}}, {"t1", []string{"--tenant", "t1", "--topic", "events"}}, {"t2", []string{"--topic", "t2:events"}}} {
		admin(append([]string{"topic", "stats"}, tc.args...)...)
		if tn := jsonField(t, admin(append([]string{"topic", "get"}, tc.args...)...), "tenant"); tn != tc.tenant {
			t.Errorf("topic get %v: tenant %q, want %q", tc.args, tn, tc.tenant)
		}
	}
	var tl struct {
		Topics []struct{ Tenant, ARN string }
	}
	if err := json.Unmarshal([]byte(admin("topic", "list", "--tenant", "t2")), &tl); err != nil || len(tl.Topics) != 1 || tl.Topics[0].ARN != "arn:aws:sns:default:t2:events" {
		t.Errorf("topic list --tenant t2: %+v %v", tl, err)
	}
	// Removing t1's alice: refused while she owns a bucket; the others stay.
	if _, err := g.Admin("user", "rm", "--tenant", "t1", "--uid", "alice"); err == nil {
		t.Error("user rm of a bucket owner: accepted")
	}
	if _, err := users[1].c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("adm"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("a")}, {Key: aws.String("b")}, {Key: aws.String("c")}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := users[1].c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("adm")}); err != nil {
		t.Fatal(err)
	}
	admin("user", "rm", "--tenant", "t1", "--uid", "alice")
	for _, u := range []string{"alice", "t2$alice"} {
		admin("user", "info", "--uid", u)
	}
	if _, err := g.Admin("user", "info", "--uid", "t1$alice"); err == nil {
		t.Error("t1$alice still there after user rm")
	}
}

// TestTenantLifecycleNotifications: two tenants' buckets of one name, each
// with a topic of one name, delivering to a real HTTP endpoint. Each
// bucket's events carry its S3 name and its tenant's bucket ARN; t1's
// lifecycle rule expires t1's object only.
func TestTenantLifecycleNotifications(t *testing.T) {
	rv := newReceiver(t)
	g := StartGateway(t, "--lc-debug-interval", "2s", "--notif-scan-interval", "1s")
	ctx := context.Background()
	users := createTenantUsers(t, g)
	t1, t2 := users[1], users[2]
	for _, u := range []tenantUser{t1, t2} {
		if _, err := u.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("lcb")}); err != nil {
			t.Fatal(err)
		}
		want(t, "CreateTopic", u.sns(t, g, topicForm("CreateTopic", "Name", "lctopic",
			"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", rv.srv.URL,
			"Attributes.entry.2.key", "persistent", "Attributes.entry.2.value", "true")), 200, "")
		if _, err := u.c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
			Bucket: aws.String("lcb"), NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
				Id: aws.String("n"), TopicArn: aws.String(u.topicARN("lctopic")), Events: []types.Event{"s3:ObjectCreated:*", "s3:ObjectLifecycle:*"}}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := u.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lcb"), Key: aws.String("logs/a"), Body: strings.NewReader(u.name)}); err != nil {
			t.Fatal(err)
		}
	}
	rule := func(prefix string) *types.BucketLifecycleConfiguration {
		return &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{ID: aws.String("r"), Status: types.ExpirationStatusEnabled,
			Filter: &types.LifecycleRuleFilter{Prefix: aws.String(prefix)}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}}}}
	}
	if _, err := t1.c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("lcb"), LifecycleConfiguration: rule("logs/")}); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("lcb"), LifecycleConfiguration: rule("other/")}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := t1.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lcb"), Key: aws.String("logs/a")})
		if apiCode(err) == "NotFound" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("t1's logs/a not expired: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := g.Admin("lc", "process", "--tenant", "t2", "--bucket", "lcb"); err != nil {
		t.Fatalf("lc process t2/lcb: %s %v", out, err)
	}
	waitPasses(t, g, "t2/lcb", 2)
	if _, err := t2.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lcb"), Key: aws.String("logs/a")}); err != nil {
		t.Fatalf("t2's logs/a after t2's passes: %v", err)
	}

	// Events: one creation per tenant and t1's expiry, each under its
	// tenant's bucket ARN.
	wantEv := map[string]bool{
		"ObjectCreated:Put arn:aws:s3:default:t1:lcb":                  true,
		"ObjectCreated:Put arn:aws:s3:default:t2:lcb":                  true,
		"ObjectLifecycle:Expiration:Current arn:aws:s3:default:t1:lcb": true,
	}
	for {
		got := map[string]bool{}
		for _, r := range rv.snapshot() {
			name, _ := field(r, "eventName").(string)
			arn, _ := field(r, "s3", "bucket", "arn").(string)
			if b, _ := field(r, "s3", "bucket", "name").(string); b != "lcb" {
				t.Fatalf("event bucket name %q, want lcb", b)
			}
			got[strings.TrimPrefix(name, "s3:")+" "+arn] = true
		}
		if len(got) == len(wantEv) {
			for k := range got {
				if !wantEv[k] {
					t.Fatalf("unexpected event %s (all: %v)", k, got)
				}
			}
			break
		}
		if len(got) > len(wantEv) || time.Now().After(deadline) {
			t.Fatalf("events %v, want %v", got, wantEv)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTenantVirtualHost: a virtual-host-style request names a bucket of
// the caller's own tenant (RGW: a host name cannot carry "tenant:"), and
// anonymous ones the empty tenant's.
func TestTenantVirtualHost(t *testing.T) {
	g := StartGateway(t, "--domain", "cairn.test")
	ctx := context.Background()
	users := createTenantUsers(t, g)
	for _, u := range users {
		if _, err := u.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("vhb")}); err != nil {
			t.Fatal(err)
		}
		if _, err := u.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vhb"), Key: aws.String("k"), Body: strings.NewReader(u.name), ACL: types.ObjectCannedACLPublicRead}); err != nil {
			t.Fatal(err)
		}
	}
	port := g.Endpoint[strings.LastIndexByte(g.Endpoint, ':'):]
	get := func(p principal) reply {
		r := request(t, g, http.MethodGet, "/k", "")
		r.Host = "vhb.cairn.test" + port
		return send(t, p.signV4(t, r, ""))
	}
	for _, u := range users {
		if r := get(u.principal); r.status != 200 || r.body != u.name {
			t.Errorf("%s virtual-host GET: %d %q", u.name, r.status, r.body)
		}
	}
	if r := get(principal{}); r.status != 200 || r.body != users[0].name {
		t.Errorf("anonymous virtual-host GET: %d %q, want the empty tenant's", r.status, r.body)
	}
}
