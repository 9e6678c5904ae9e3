package tests

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The notification configuration routes are authorized on their own
// actions like any S3 route (not "bucket owner only"): the owner's explicit
// Deny s3:PutBucketNotification binds her, and a bucket policy Allow lets
// another user read and replace the configuration.
func TestNotificationConfigAuthorized(t *testing.T) {
	g := StartGateway(t)
	alice, bob := createUser(t, g, "nalice"), createUser(t, g, "nbob")
	ca, cb := sdkClient(g, alice.ak, alice.sk), sdkClient(g, bob.ak, bob.sk)
	anon := principal{}
	ctx := context.Background()
	if _, err := ca.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("nconf")}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []principal{alice, bob} {
		r := p.sns(t, g, topicForm("CreateTopic", "Name", p.name+"-topic",
			"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "http://127.0.0.1:1"))
		want(t, "CreateTopic "+p.name, r, 200, "")
	}
	conf := func(id, owner string) *types.NotificationConfiguration {
		return &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{{
			Id: aws.String(id), TopicArn: aws.String("arn:aws:sns:default::" + owner + "-topic"),
			Events: []types.Event{"s3:ObjectCreated:*"}}}}
	}
	put := func(c *s3.Client, id, owner string) error {
		_, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
			Bucket: aws.String("nconf"), NotificationConfiguration: conf(id, owner)})
		return err
	}
	ids := func(c *s3.Client) ([]string, error) {
		out, err := c.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String("nconf")})
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, tc := range out.TopicConfigurations {
			ids = append(ids, aws.ToString(tc.Id))
		}
		return ids, nil
	}

	// Before any policy: the owner may, another user may not.
	if err := put(ca, "first", "nalice"); err != nil {
		t.Fatal(err)
	}
	if err := put(cb, "bobs", "nbob"); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob without a grant: %v", err)
	}
	if _, err := ids(cb); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob reads without a grant: %v", err)
	}

	policy := `{"Version":"2012-10-17","Statement":[
	 {"Sid":"OwnerNoNotif","Effect":"Deny","Principal":{"AWS":"arn:aws:iam:::user/nalice"},"Action":"s3:PutBucketNotification","Resource":"arn:aws:s3:::nconf"},
	 {"Sid":"BobNotif","Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/nbob"},"Action":["s3:GetBucketNotification","s3:PutBucketNotification"],"Resource":"arn:aws:s3:::nconf"}]}`
	if _, err := ca.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("nconf"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	if err := put(ca, "second", "nalice"); apiCode(err) != "AccessDenied" {
		t.Fatalf("owner's put under her own explicit Deny: %v", err)
	}
	want(t, "owner's delete under Deny", alice.do(t, g, "DELETE", "/nconf?notification", ""), 403, "AccessDenied")
	if got, err := ids(ca); err != nil || len(got) != 1 || got[0] != "first" {
		t.Fatalf("after the denied put and delete: %v %v", got, err)
	}
	if err := put(cb, "bobs", "nbob"); err != nil {
		t.Fatalf("bob's put under the policy Allow: %v", err)
	}
	for _, c := range []*s3.Client{ca, cb} {
		if got, err := ids(c); err != nil || len(got) != 1 || got[0] != "bobs" {
			t.Fatalf("after bob's put: %v %v", got, err)
		}
	}
	want(t, "anonymous read", anon.do(t, g, "GET", "/nconf?notification", ""), 403, "AccessDenied")
}
