package tests

// Security tests against a real `cairn serve`: forged signed URLs (SigV2
// and SigV4) and a cross-user matrix over S3, SNS and the admin API.

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
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

// principal signs requests (SigV4, or SigV2 headers when v2); ak == "" is
// anonymous.
type principal struct {
	name, ak, sk string
	v2           bool
}

type reply struct {
	status int
	code   string
	body   string
}

// codeRE finds the error code of an XML (S3, SNS) or JSON (admin) error.
var codeRE = regexp.MustCompile(`<Code>([^<]*)</Code>|"Code":\s*"([^"]*)"`)

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
		rp.code = m[1] + m[2]
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
	if p.v2 {
		return send(t, p.signV2(r))
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

func contentMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
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
	admin := principal{name: "admin", ak: g.AccessKey, sk: g.SecretKey}
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
		want(t, "V2 header-signed SNS", send(t, alice.signV2(r)), 403, "AccessDenied")
		r = request(t, g, "POST", "/", topicForm("DeleteTopic", "TopicArn", arn).Encode())
		want(t, "V2 header-signed DeleteTopic", send(t, alice.signV2(r)), 403, "AccessDenied")
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
		// Header parameters (x-amz-*, content-type) V2 signs as headers.
		for _, p := range []string{"x-amz-foo=1", "content-type=text/html", "x-amz-acl=public-read"} {
			want(t, "GET object &"+p, get(t, obj+"&"+p, ""), 403, "SignatureDoesNotMatch")
		}
		// Parameters V2 does not sign and that could select another
		// operation: refused before they can matter, as a tampered URL.
		for _, p := range []string{"attributes", "retention", "legal-hold", "encryption", "Action=ListTopics", "uid=alice"} {
			want(t, "GET object &"+p, get(t, obj+"&"+p, ""), 403, "SignatureDoesNotMatch")
		}
		// A repeated signed parameter: V2 covers one value only.
		upl := alice.presignV2(t, g, "GET", "/alicebkt?uploads", "")
		want(t, "uploads twice", get(t, upl+"&uploads=2", ""), 403, "SignatureDoesNotMatch")
		// Listing parameters only narrow what the signed listing grants.
		list := alice.presignV2(t, g, "GET", "/alicebkt", "")
		if got := get(t, list+"&prefix=k&max-keys=1&list-type=2", ""); got.status != 200 || !strings.Contains(got.body, "<Key>k</Key>") {
			t.Fatalf("V2 listing with prefix: %d %s", got.status, got.body)
		}
	})
	t.Run("signed headers in the query", func(t *testing.T) {
		// As botocore presigns: Content-Type and x-amz-* are signed as
		// headers and carried as query parameters; the client sends none.
		r := request(t, g, "PUT", "/alicebkt/up", "")
		r.Header.Set("Content-Type", "image/png")
		r.Header.Set("X-Amz-Meta-Who", "browser")
		exp := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
		q := r.URL.Query()
		q.Set("content-type", "image/png")
		q.Set("x-amz-meta-who", "browser")
		q.Set("AWSAccessKeyId", alice.ak)
		q.Set("Expires", exp)
		q.Set("Signature", sigv2.Sign(alice.sk, sigv2.StringToSign(r, exp, "")))
		r.URL.RawQuery = q.Encode()
		put := func(u string) reply {
			pr, err := http.NewRequest("PUT", u, strings.NewReader("png bytes"))
			if err != nil {
				t.Fatal(err)
			}
			return send(t, pr)
		}
		want(t, "tampered x-amz-meta-who", put(strings.Replace(r.URL.String(), "x-amz-meta-who=browser", "x-amz-meta-who=mallory", 1)), 403, "SignatureDoesNotMatch")
		want(t, "presigned PUT with signed headers in the query", put(r.URL.String()), 200, "")
		head, err := http.DefaultClient.Do(alice.signV4(t, request(t, g, "HEAD", "/alicebkt/up", ""), ""))
		if err != nil {
			t.Fatal(err)
		}
		head.Body.Close()
		if head.StatusCode != 200 || head.Header.Get("Content-Type") != "image/png" || head.Header.Get("X-Amz-Meta-Who") != "browser" {
			t.Fatalf("stored object: %d %v", head.StatusCode, head.Header)
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
	admin := principal{name: "admin", ak: g.AccessKey, sk: g.SecretKey}
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
	// Admin writes carry their command in the body: a presigned POST
	// /admin/rados would run any rados command.
	ru := admin.presignV4(t, g, "POST", "/admin/rados")
	r0, _ := http.NewRequest("POST", ru, strings.NewReader(`{"args":["--pool","default.rgw.meta","ls"]}`))
	want(t, "presigned admin rados", send(t, r0), 400, "InvalidRequest")
	want(t, "signed admin rados", admin.do(t, g, "POST", "/admin/rados", `{"args":["--pool","default.rgw.meta","ls"]}`), 200, "")
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

// TestCrossUserMatrix runs every operation on alice's bucket, object and
// topic, and the admin API, as bob, anonymous and alice's key with a
// wrong secret: each is refused with the expected status and code, and
// afterwards alice's resources are exactly as before.
func TestCrossUserMatrix(t *testing.T) {
	g := StartGateway(t)
	alice := createUser(t, g, "alice")
	bob := createUser(t, g, "bob")
	anon := principal{name: "anonymous"}
	forger := principal{name: "wrong-secret", ak: alice.ak, sk: "not-alices-secret-000000000000000000000"}
	arn := "arn:aws:sns:default::mxtopic"

	want(t, "bucket", alice.do(t, g, "PUT", "/mx-alice", ""), 200, "")
	want(t, "object", alice.do(t, g, "PUT", "/mx-alice/k", "alice data"), 200, "")
	want(t, "topic", alice.sns(t, g, topicForm("CreateTopic", "Name", "mxtopic",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", topicEndpoint,
		"Attributes.entry.2.key", "OpaqueData", "Attributes.entry.2.value", "alice-opaque")), 200, "")
	want(t, "bob's bucket", bob.do(t, g, "PUT", "/mx-bob", ""), 200, "")
	notif := `<NotificationConfiguration><TopicConfiguration><Id>n1</Id><Topic>` + arn +
		`</Topic><Event>s3:ObjectCreated:*</Event></TopicConfiguration></NotificationConfiguration>`

	const delBody = `<Delete><Object><Key>k</Key></Object></Delete>`
	type op struct {
		name, method, path, body string
		hdr                      []string
	}
	s3ops := []op{
		{"ListObjects", "GET", "/mx-alice", "", nil},
		{"ListObjectsV2", "GET", "/mx-alice?list-type=2", "", nil},
		{"GetBucketLocation", "GET", "/mx-alice?location", "", nil},
		{"GetBucketVersioning", "GET", "/mx-alice?versioning", "", nil},
		{"GetBucketAcl", "GET", "/mx-alice?acl", "", nil},
		{"ListMultipartUploads", "GET", "/mx-alice?uploads", "", nil},
		{"GetBucketNotification", "GET", "/mx-alice?notification", "", nil},
		{"PutBucketNotification", "PUT", "/mx-alice?notification", notif, nil},
		{"DeleteBucketNotification", "DELETE", "/mx-alice?notification", "", nil},
		{"GetBucketWebsite(501)", "GET", "/mx-alice?website", "", nil},
		{"PutBucketCors(501)", "PUT", "/mx-alice?cors", "<CORSConfiguration/>", nil},
		{"DeleteBucketLifecycle(501)", "DELETE", "/mx-alice?lifecycle", "", nil},
		{"PostBucket(501)", "POST", "/mx-alice?restore", "", nil},
		{"PatchBucket(405)", "PATCH", "/mx-alice", "", nil},
		{"DeleteObjects", "POST", "/mx-alice?delete", delBody, []string{"Content-MD5", contentMD5(delBody)}},
		{"DeleteBucket", "DELETE", "/mx-alice", "", nil},
		{"GetObject", "GET", "/mx-alice/k", "", nil},
		{"GetObjectAcl", "GET", "/mx-alice/k?acl", "", nil},
		{"GetObjectTorrent", "GET", "/mx-alice/k?torrent", "", nil},
		{"PutObjectRetention(501)", "PUT", "/mx-alice/k?retention", "<Retention/>", nil},
		{"PutObject", "PUT", "/mx-alice/new", "bob was here", nil},
		{"PutObject(overwrite)", "PUT", "/mx-alice/k", "bob was here", nil},
		{"CopyObject(into)", "PUT", "/mx-alice/copy", "", []string{"x-amz-copy-source", "/mx-bob/none"}},
		{"CopyObject(out of)", "PUT", "/mx-bob/stolen", "", []string{"x-amz-copy-source", "/mx-alice/k"}},
		{"CreateMultipartUpload", "POST", "/mx-alice/mp?uploads", "", nil},
		{"UploadPart", "PUT", "/mx-alice/mp?partNumber=1&uploadId=x", "part", nil},
		{"ListParts", "GET", "/mx-alice/mp?uploadId=x", "", nil},
		{"AbortMultipartUpload", "DELETE", "/mx-alice/mp?uploadId=x", "", nil},
		{"DeleteObject", "DELETE", "/mx-alice/k", "", nil},
	}
	snsops := []url.Values{
		topicForm("GetTopicAttributes", "TopicArn", arn),
		topicForm("GetTopic", "TopicArn", arn),
		topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "push-endpoint", "AttributeValue", "http://evil.example/"),
		topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "Policy", "AttributeValue",
			`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"}]}`),
		topicForm("DeleteTopic", "TopicArn", arn),
		topicForm("CreateTopic", "Name", "mxtopic", "Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "http://evil.example/"),
	}
	adminops := []op{
		{"GetUser", "GET", "/admin/user?uid=alice", "", nil},
		{"ListUsers", "GET", "/admin/user", "", nil},
		{"CreateUser", "PUT", "/admin/user?uid=eve&admin=true", "", nil},
		{"RemoveUser", "DELETE", "/admin/user?uid=alice", "", nil},
		{"ListBuckets", "GET", "/admin/bucket", "", nil},
		{"BucketStats", "GET", "/admin/bucket?bucket=mx-alice&stats", "", nil},
		{"ListTopics", "GET", "/admin/topic", "", nil},
		{"RemoveTopic", "DELETE", "/admin/topic?topic=mxtopic", "", nil},
		{"Notifications", "GET", "/admin/notification?bucket=mx-alice", "", nil},
		{"Reshard", "POST", "/admin/reshard?bucket=mx-alice&num-shards=3", "", nil},
		{"Rados", "GET", "/admin/rados?pool=default.rgw.log", "", nil},
	}
	// Expected refusal per principal: bob is authenticated but not the
	// owner; the others never get past authentication.
	type expect struct {
		status            int
		s3, sns, adminErr string
	}
	cases := []struct {
		p principal
		e expect
	}{
		{bob, expect{403, "AccessDenied", "AuthorizationError", "AccessDenied"}},
		{principal{name: "bob-sigv2", ak: bob.ak, sk: bob.sk, v2: true}, expect{403, "AccessDenied", "", ""}},
		{anon, expect{403, "AccessDenied", "AccessDenied", "AccessDenied"}},
		{forger, expect{403, "SignatureDoesNotMatch", "SignatureDoesNotMatch", "SignatureDoesNotMatch"}},
	}
	for _, c := range cases {
		t.Run(c.p.name, func(t *testing.T) {
			for _, o := range s3ops {
				got := c.p.do(t, g, o.method, o.path, o.body, o.hdr...)
				if c.p.v2 && strings.Contains(o.path, "?retention") {
					// Not a parameter SigV2 signs: refused before authz,
					// as a tampered signature.
					want(t, "S3 "+o.name, got, 403, "SignatureDoesNotMatch")
					continue
				}
				if o.name == "DeleteObjects" && c.e.s3 == "AccessDenied" && got.status == 200 {
					// S3 decides DeleteObjects per key: 200 with an
					// AccessDenied error for each key (nothing deleted:
					// checked at the end).
					if !strings.Contains(got.body, "<Code>AccessDenied</Code>") || strings.Contains(got.body, "<Deleted>") {
						t.Errorf("S3 DeleteObjects: %s", got.body)
					}
					continue
				}
				want(t, "S3 "+o.name, got, c.e.status, c.e.s3)
			}
			for _, m := range []string{"/mx-alice", "/mx-alice/k"} {
				want(t, "HEAD "+m, c.p.do(t, g, "HEAD", m, ""), c.e.status, "")
			}
			// SigV2 is refused outright for the SNS (403 AccessDenied, as
			// RGW) and admin APIs.
			apiStatus, snsStatus, snsCode, adminCode := c.e.status, c.e.status, c.e.sns, c.e.adminErr
			if c.p.v2 {
				apiStatus, snsStatus, snsCode, adminCode = 400, 403, "AccessDenied", "InvalidRequest"
			}
			for _, f := range snsops {
				want(t, "SNS "+f.Get("Action")+" "+f.Get("AttributeName"), c.p.sns(t, g, f), snsStatus, snsCode)
			}
			lt := c.p.sns(t, g, topicForm("ListTopics"))
			if strings.Contains(lt.body, "mxtopic") || strings.Contains(lt.body, "s3cr3t") || strings.Contains(lt.body, "alice-opaque") {
				t.Errorf("ListTopics shows alice's topic to %s: %s", c.p.name, lt.body)
			}
			for _, o := range adminops {
				want(t, "admin "+o.name, c.p.do(t, g, o.method, o.path, o.body), apiStatus, adminCode)
			}
		})
	}
	// Bob may not attach alice's topic to his own bucket either.
	want(t, "bob attaches alice's topic", bob.do(t, g, "PUT", "/mx-bob?notification", notif), 403, "AccessDenied")

	// Missing buckets: NoSuchBucket whatever the subresource, even an
	// unimplemented one; only the owner learns about NotImplemented.
	want(t, "missing bucket ?website", bob.do(t, g, "GET", "/mx-nobucket?website", ""), 404, "NoSuchBucket")
	want(t, "missing bucket PUT ?cors", bob.do(t, g, "PUT", "/mx-nobucket?cors", "<CORSConfiguration/>"), 404, "NoSuchBucket")
	want(t, "owner ?website", alice.do(t, g, "GET", "/mx-alice?website", ""), 501, "NotImplemented")

	// Nothing changed.
	if got := alice.do(t, g, "GET", "/mx-alice/k", ""); got.status != 200 || got.body != "alice data" {
		t.Errorf("alice's object: %d %s", got.status, got.body)
	}
	for _, k := range []string{"new", "copy", "mp"} {
		want(t, "no object "+k, alice.do(t, g, "HEAD", "/mx-alice/"+k, ""), 404, "")
	}
	want(t, "nothing stolen", bob.do(t, g, "HEAD", "/mx-bob/stolen", ""), 404, "")
	if got := alice.do(t, g, "GET", "/mx-alice?uploads", ""); strings.Contains(got.body, "<Upload>") {
		t.Errorf("an upload was created: %s", got.body)
	}
	if got := alice.do(t, g, "GET", "/mx-alice?notification", ""); strings.Contains(got.body, "<Id>") {
		t.Errorf("a notification was configured: %s", got.body)
	}
	attrs := alice.sns(t, g, topicForm("GetTopicAttributes", "TopicArn", arn))
	if attrs.status != 200 || strings.Contains(attrs.body, "evil.example") || strings.Contains(attrs.body, "sns:*") || !strings.Contains(attrs.body, "alice-opaque") {
		t.Errorf("alice's topic changed: %d %s", attrs.status, attrs.body)
	}
	admin := principal{name: "admin", ak: g.AccessKey, sk: g.SecretKey}
	want(t, "alice still exists", admin.do(t, g, "GET", "/admin/user?uid=alice", ""), 200, "")
	want(t, "no eve", admin.do(t, g, "GET", "/admin/user?uid=eve", ""), 404, "")
}

// TestTopicPolicyGrants: a topic's Policy opens exactly what it names to
// another user, who sees the push-endpoint redacted; without a policy,
// attaching another user's topic is refused unless the operator turned
// topic-require-publish-policy off.
func TestTopicPolicyGrants(t *testing.T) {
	g := StartGateway(t)
	alice := createUser(t, g, "alice")
	bob := createUser(t, g, "bob")
	arn := "arn:aws:sns:default::granted"
	want(t, "topic", alice.sns(t, g, topicForm("CreateTopic", "Name", "granted",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", topicEndpoint)), 200, "")
	want(t, "bob's bucket", bob.do(t, g, "PUT", "/pol-bob", ""), 200, "")
	notif := `<NotificationConfiguration><TopicConfiguration><Id>n1</Id><Topic>` + arn +
		`</Topic><Event>s3:ObjectCreated:*</Event></TopicConfiguration></NotificationConfiguration>`
	want(t, "attach without policy", bob.do(t, g, "PUT", "/pol-bob?notification", notif), 403, "AccessDenied")

	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/bob"]},` +
		`"Action":["sns:Publish","sns:GetTopicAttributes"],"Resource":["` + arn + `"]}]}`
	want(t, "set policy", alice.sns(t, g, topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "Policy", "AttributeValue", policy)), 200, "")

	want(t, "attach with sns:Publish", bob.do(t, g, "PUT", "/pol-bob?notification", notif), 200, "")
	for _, action := range []string{"GetTopicAttributes", "GetTopic", "ListTopics"} {
		got := bob.sns(t, g, topicForm(action, "TopicArn", arn))
		want(t, "bob "+action, got, 200, "")
		if !strings.Contains(got.body, "granted") || strings.Contains(got.body, "s3cr3t-token") || !strings.Contains(got.body, "token=xxxxx") {
			t.Errorf("bob's %s view: %s", action, got.body)
		}
	}
	// The owner still sees the endpoint as given.
	if got := alice.sns(t, g, topicForm("GetTopic", "TopicArn", arn)); !strings.Contains(got.body, "s3cr3t-token") {
		t.Errorf("alice's view: %s", got.body)
	}
	want(t, "bob SetTopicAttributes", bob.sns(t, g, topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "push-endpoint", "AttributeValue", "http://evil.example/")), 403, "AuthorizationError")
	want(t, "bob DeleteTopic", bob.sns(t, g, topicForm("DeleteTopic", "TopicArn", arn)), 403, "AuthorizationError")

	// An explicit Deny binds the owner too.
	deny := `{"Statement":[{"Effect":"Deny","Principal":"*","Action":"sns:Publish"}]}`
	want(t, "set deny", alice.sns(t, g, topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "Policy", "AttributeValue", deny)), 200, "")
	want(t, "alice bucket", alice.do(t, g, "PUT", "/pol-alice", ""), 200, "")
	want(t, "owner denied by own policy", alice.do(t, g, "PUT", "/pol-alice?notification", notif), 403, "AccessDenied")
	want(t, "bad policy", alice.sns(t, g, topicForm("SetTopicAttributes", "TopicArn", arn, "AttributeName", "Policy", "AttributeValue", `{"Statement":[{"Effect":"Allow"}]}`)), 400, "InvalidArgument")

	// A '/' left unencoded in a password is a malformed URL, not a host.
	got := alice.sns(t, g, topicForm("CreateTopic", "Name", "badurl",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "amqp://user:5672/Q7zX@127.0.0.1",
		"Attributes.entry.2.key", "amqp-exchange", "Attributes.entry.2.value", "ex"))
	want(t, "unencoded '/' in password", got, 400, "InvalidArgument")
	if !strings.Contains(got.body, "malformed") || strings.Contains(got.body, "Q7zX") {
		t.Errorf("error: %s", got.body)
	}
	if strings.Contains(g.Log.String(), "s3cr3t-token") || strings.Contains(g.Log.String(), "Q7zX") {
		t.Errorf("a secret reached the log:\n%s", g.Log.String())
	}

	// The operator may allow attaching any topic.
	g2 := StartGateway(t, "--topic-require-publish-policy=false")
	alice2 := createUser(t, g2, "alice")
	bob2 := createUser(t, g2, "bob")
	want(t, "topic", alice2.sns(t, g2, topicForm("CreateTopic", "Name", "granted")), 200, "")
	want(t, "bob's bucket", bob2.do(t, g2, "PUT", "/pol-bob", ""), 200, "")
	want(t, "attach with the option off", bob2.do(t, g2, "PUT", "/pol-bob?notification", notif), 200, "")
}
