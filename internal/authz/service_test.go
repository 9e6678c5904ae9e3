package authz

import "testing"

// A service principal (the gateway acting for bucket logging) matches only
// statements naming that service or "*", never a user's; users never match
// a service statement.
func TestServicePrincipal(t *testing.T) {
	p, err := ParseBucketPolicy([]byte(`{"Version":"2012-10-17","Statement":[
 {"Sid":"svc","Effect":"Allow","Principal":{"Service":["logging.s3.amazonaws.com"]},"Action":"s3:PutObject","Resource":"arn:aws:s3:::logs/*"},
 {"Sid":"user","Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::logs/*"}]}`), "logs")
	if err != nil {
		t.Fatal(err)
	}
	res := Resource{Bucket: "logs", Key: "k"}
	for _, tc := range []struct {
		who  Principal
		act  Action
		want Effect
	}{
		{Principal{Service: "logging.s3.amazonaws.com"}, S3PutObject, Allow},
		{Principal{Service: "LOGGING.s3.amazonaws.com"}, S3PutObject, Allow},
		{Principal{Service: "other.amazonaws.com"}, S3PutObject, 0},
		{Principal{Service: "logging.s3.amazonaws.com"}, S3GetObject, 0},
		{Principal{ID: "bob"}, S3PutObject, 0},
		{Principal{ID: "bob"}, S3GetObject, Allow},
		{Anonymous, S3PutObject, 0},
	} {
		if got, _ := p.Eval(&Request{Principal: tc.who, Action: tc.act, Resource: res}); got != tc.want {
			t.Errorf("%+v %v: %v, want %v", tc.who, tc.act, got, tc.want)
		}
	}
}
