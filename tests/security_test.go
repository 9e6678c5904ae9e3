package tests

// Security tests against a real `cairn serve`: forged signed URLs (SigV2
// and SigV4) and a cross-user matrix over S3, SNS and the admin API.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/cairn-s3/cairn/internal/auth/sigv2"
)

// principal signs requests; ak == "" is anonymous.
type principal struct{ name, ak, sk string }

type reply struct {
	status int
	code   string
	body   string
}

var codeRE = regexp.MustCompile(`<Code>([^<]*)</Code>`)

func send(t *testing.T, r *http.Request) reply {
	t.Helper()
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	rp := reply{status: res.StatusCode, body: string(b)}
	if m := codeRE.FindStringSubmatch(rp.body); m != nil {
		rp.code = m[1]
	}
	return rp
}

// request builds a request for g.
func request(t *testing.T, g *Gateway, method, pathQuery, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, g.Endpoint+pathQuery, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost && (pathQuery == "/" || strings.HasPrefix(pathQuery, "/?")) {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return r
}

// signV4 signs r in the header with its body's hash (a signed payload).
func (p principal) signV4(t *testing.T, r *http.Request, body string) *http.Request {
	t.Helper()
	if p.ak == "" {
		return r
	}
	sum := sha256.Sum256([]byte(body))
	h := hex.EncodeToString(sum[:])
	r.Header.Set("X-Amz-Content-Sha256", h)
	creds := aws.Credentials{AccessKeyID: p.ak, SecretAccessKey: p.sk}
	err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
		SignHTTP(context.Background(), creds, r, h, "s3", "us-east-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (p principal) do(t *testing.T, g *Gateway, method, pathQuery, body string, hdr ...string) reply {
	t.Helper()
	r := request(t, g, method, pathQuery, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return send(t, p.signV4(t, r, body))
}

// sns posts an SNS query-protocol form, signed with SigV4.
func (p principal) sns(t *testing.T, g *Gateway, form url.Values) reply {
	t.Helper()
	return p.do(t, g, http.MethodPost, "/", form.Encode())
}

// presignV4 returns a SigV4 presigned URL (UNSIGNED-PAYLOAD).
func (p principal) presignV4(t *testing.T, g *Gateway, method, pathQuery string) string {
	t.Helper()
	r := request(t, g, method, pathQuery, "")
	q := r.URL.Query()
	q.Set("X-Amz-Expires", "3600")
	r.URL.RawQuery = q.Encode()
	u, _, err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
		PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: p.ak, SecretAccessKey: p.sk}, r, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// presignV2 returns a SigV2 presigned URL (what boto3's "s3" signer
// makes): the signature covers the method, the path and V2's
// subresources only. vhostBucket is the bucket a client addressing
// "<bucket>.<domain>" signs in front of the path.
func (p principal) presignV2(t *testing.T, g *Gateway, method, pathQuery, vhostBucket string) string {
	t.Helper()
	r := request(t, g, method, pathQuery, "")
	exp := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	sig := sigv2.Sign(p.sk, sigv2.StringToSign(r, exp, vhostBucket))
	q := r.URL.Query()
	q.Set("AWSAccessKeyId", p.ak)
	q.Set("Expires", exp)
	q.Set("Signature", sig)
	r.URL.RawQuery = q.Encode()
	return r.URL.String()
}

// signV2 signs r with a SigV2 Authorization header.
func (p principal) signV2(r *http.Request) *http.Request {
	r.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	sig := sigv2.Sign(p.sk, sigv2.StringToSign(r, r.Header.Get("Date"), ""))
	r.Header.Set("Authorization", "AWS "+p.ak+":"+sig)
	return r
}

func get(t *testing.T, rawURL, host string) reply {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		r.Host = host
	}
	return send(t, r)
}

func createUser(t *testing.T, g *Gateway, uid string) principal {
	t.Helper()
	p := principal{name: uid, ak: strings.ToUpper(uid) + "KEY0000000000000", sk: uid + "-secret-0000000000000000000000000000"}
	if _, err := g.Admin("user", "create", "--uid", uid, "--access-key", p.ak, "--secret", p.sk); err != nil {
		t.Fatal(err)
	}
	return p
}

func want(t *testing.T, what string, got reply, status int, code string) {
	t.Helper()
	if got.status != status || (code != "" && got.code != code) {
		t.Errorf("%s: got %d %s, want %d %s\n%s", what, got.status, got.code, status, code, got.body)
	}
}

func topicForm(action string, kv ...string) url.Values {
	f := url.Values{"Action": {action}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

const topicEndpoint = "http://127.0.0.1:9/hook?token=s3cr3t-token"

// TestForgedSigV2 appends unsigned parameters to SigV2-signed requests:
// each must be refused, and nothing may change.
func TestForgedSigV2(t *testing.T) {
	g := StartGateway(t, "--domain", "cairn.test")
	admin := principal{"admin", g.AccessKey, g.SecretKey}
	alice := createUser(t, g, "alice")
	bob := createUser(t, g, "bob")
	arn := "arn:aws:sns:default::alicetopic"

	want(t, "create topic", alice.sns(t, g, topicForm("CreateTopic", "Name", "alicetopic",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", topicEndpoint)), 200, "")
	want(t, "alice bucket", alice.do(t, g, "PUT", "/alicebkt", ""), 200, "")
	want(t, "alice object", alice.do(t, g, "PUT", "/alicebkt/k", "alice data"), 200, "")
	want(t, "bob bucket", bob.do(t, g, "PUT", "/bobbkt", ""), 200, "")
	want(t, "bob object", bob.do(t, g, "PUT", "/bobbkt/alicebkt", "bob data"), 200, "")

	t.Run("admin user uid", func(t *testing.T) {
		u := admin.presignV2(t, g, "GET", "/admin/user", "")
		got := get(t, u+"&uid=alice", "")
		want(t, "forged GET /admin/user&uid=alice", got, 400, "InvalidRequest")
		if strings.Contains(got.body, alice.sk) {
			t.Fatalf("alice's secret leaked: %s", got.body)
		}
		// Even the unmodified V2 URL is refused: the admin API is V4-only.
		want(t, "V2 admin", get(t, u, ""), 400, "InvalidRequest")
	})
	t.Run("SNS action on ListBuckets", func(t *testing.T) {
		u := alice.presignV2(t, g, "GET", "/", "")
		want(t, "ListBuckets by V2 presign", get(t, u, ""), 200, "")
		forged := u + "&" + topicForm("SetTopicAttributes", "TopicArn", arn,
			"AttributeName", "push-endpoint", "AttributeValue", "http://evil.example/").Encode()
		got := get(t, forged, "")
		if got.status == 200 {
			t.Fatalf("forged SetTopicAttributes answered 200: %s", got.body)
		}
		attrs := alice.sns(t, g, topicForm("GetTopic", "TopicArn", arn))
		if !strings.Contains(attrs.body, topicEndpoint) || strings.Contains(attrs.body, "evil.example") {
			t.Fatalf("topic changed: %s", attrs.body)
		}
	})
	t.Run("SNS over V2", func(t *testing.T) {
		body := topicForm("ListTopics").Encode()
		r := request(t, g, "POST", "/", body)
		want(t, "V2 header-signed SNS", send(t, alice.signV2(r)), 400, "InvalidRequest")
		r = request(t, g, "POST", "/", topicForm("DeleteTopic", "TopicArn", arn).Encode())
		want(t, "V2 header-signed DeleteTopic", send(t, alice.signV2(r)), 400, "InvalidRequest")
		want(t, "topic still there", alice.sns(t, g, topicForm("GetTopicAttributes", "TopicArn", arn)), 200, "")
	})
	t.Run("S3 unsigned parameters", func(t *testing.T) {
		obj := alice.presignV2(t, g, "GET", "/alicebkt/k", "")
		if got := get(t, obj, ""); got.status != 200 || got.body != "alice data" {
			t.Fatalf("plain V2 presigned GET: %d %s", got.status, got.body)
		}
		// Parameters V2 signs: appending them breaks the signature.
		for _, p := range []string{"uploadId=x", "partNumber=1", "versionId=v", "tagging", "acl", "delete", "uploads", "response-content-type=text/html"} {
			want(t, "GET object &"+p, get(t, obj+"&"+p, ""), 403, "SignatureDoesNotMatch")
		}
		// Parameters V2 does not sign and that could select another
		// operation: refused before they can matter.
		for _, p := range []string{"attributes", "retention", "legal-hold", "encryption", "Action=ListTopics", "uid=alice", "x-amz-foo=1"} {
			want(t, "GET object &"+p, get(t, obj+"&"+p, ""), 400, "InvalidRequest")
		}
		// A repeated signed parameter: V2 covers one value only.
		upl := alice.presignV2(t, g, "GET", "/alicebkt?uploads", "")
		want(t, "uploads twice", get(t, upl+"&uploads=2", ""), 400, "InvalidRequest")
		// Listing parameters only narrow what the signed listing grants.
		list := alice.presignV2(t, g, "GET", "/alicebkt", "")
		if got := get(t, list+"&prefix=k&max-keys=1&list-type=2", ""); got.status != 200 || !strings.Contains(got.body, "<Key>k</Key>") {
			t.Fatalf("V2 listing with prefix: %d %s", got.status, got.body)
		}
	})
	t.Run("virtual host replay", func(t *testing.T) {
		// The admin's path-style URL listing /alicebkt, sent to
		// bobbkt.cairn.test, would read bob's object "alicebkt" if the
		// host's bucket were not signed.
		u := admin.presignV2(t, g, "GET", "/alicebkt", "")
		got := get(t, u, "bobbkt.cairn.test")
		want(t, "replayed on another bucket", got, 403, "SignatureDoesNotMatch")
		if strings.Contains(got.body, "bob data") {
			t.Fatal("bob's object leaked")
		}
		// A client that signs the virtual-host bucket works.
		ok := bob.presignV2(t, g, "GET", "/alicebkt", "bobbkt")
		if got := get(t, ok, "bobbkt.cairn.test"); got.status != 200 || got.body != "bob data" {
			t.Fatalf("correct vhost V2 URL: %d %s", got.status, got.body)
		}
	})
}

// TestForgedSigV4 shows SigV4 covers the whole query: the same forgeries
// fail on the signature, and SNS needs a signed POST body.
func TestForgedSigV4(t *testing.T) {
	g := StartGateway(t)
	admin := principal{"admin", g.AccessKey, g.SecretKey}
	alice := createUser(t, g, "alice")
	want(t, "bucket", alice.do(t, g, "PUT", "/alicebkt", ""), 200, "")
	want(t, "object", alice.do(t, g, "PUT", "/alicebkt/k", "alice data"), 200, "")
	arn := "arn:aws:sns:default::alicetopic"
	want(t, "topic", alice.sns(t, g, topicForm("CreateTopic", "Name", "alicetopic")), 200, "")

	u := admin.presignV4(t, g, "GET", "/admin/user")
	want(t, "V4 presigned admin", get(t, u, ""), 200, "")
	got := get(t, u+"&uid=alice", "")
	want(t, "forged V4 &uid=alice", got, 403, "SignatureDoesNotMatch")
	if strings.Contains(got.body, alice.sk) {
		t.Fatal("secret leaked")
	}
	obj := alice.presignV4(t, g, "GET", "/alicebkt/k")
	want(t, "V4 presigned GET", get(t, obj, ""), 200, "")
	for _, p := range []string{"uploadId=x", "attributes", "prefix=a", "Action=ListTopics"} {
		want(t, "V4 GET &"+p, get(t, obj+"&"+p, ""), 403, "")
	}
	// SNS: the action is in the body, so a presigned (unsigned-payload)
	// POST is refused, and GET /?Action= is not an SNS call.
	pu := alice.presignV4(t, g, "POST", "/")
	r, _ := http.NewRequest("POST", pu, strings.NewReader(topicForm("DeleteTopic", "TopicArn", arn).Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	want(t, "presigned SNS POST", send(t, r), 400, "InvalidRequest")
	want(t, "GET /?Action=", alice.do(t, g, "GET", "/?Action=ListTopics", ""), 405, "MethodNotAllowed")
	// A query on a signed POST is ignored: only the body counts.
	want(t, "query Action ignored", alice.do(t, g, "POST", "/?Action=DeleteTopic&TopicArn="+url.QueryEscape(arn), "Action=ListTopics"), 200, "")
	want(t, "topic still there", alice.sns(t, g, topicForm("GetTopicAttributes", "TopicArn", arn)), 200, "")
}
