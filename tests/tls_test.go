package tests

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// writeTestCert writes a self-signed certificate for 127.0.0.1 and its key
// and returns the file names and a pool trusting it.
func writeTestCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cairn test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

// dialTLS connects to addr without verifying (the raw-socket tests check
// HTTP behaviour, not the certificate).
func dialTLS(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTLS: HTTPS beside plain HTTP; aws-sdk-go-v2 (custom CA pool) and
// boto3 (verify=cafile) upload with their default checksums, which over
// TLS means aws-chunked bodies with trailing checksums.
func TestTLS(t *testing.T) {
	cert, key, pool := writeTestCert(t)
	tlsAddr := freeAddr(t)
	g := StartGateway(t, "--tls-listen", tlsAddr, "--tls-cert", cert, "--tls-key", key)
	ctx := context.Background()
	var sawTrailer bool
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c := s3.New(s3.Options{
		BaseEndpoint: aws.String("https://" + tlsAddr), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(g.AccessKey, g.SecretKey, ""),
		HTTPClient:  spyClient{hc, func(r *http.Request) { sawTrailer = sawTrailer || r.Header.Get("X-Amz-Trailer") != "" }},
		// What config.LoadDefaultConfig sets: the SDK's default checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	})
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("tlsb")}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("tls!"), 300_000)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tlsb"), Key: aws.String("k"), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	if !sawTrailer {
		t.Fatal("the SDK sent no trailing checksum over TLS: this test no longer covers aws-chunked trailers")
	}
	if put.ChecksumCRC32 == nil || *put.ChecksumCRC32 == "" {
		t.Fatalf("no checksum stored: %+v", put)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tlsb"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	back, _ := io.ReadAll(got.Body)
	if !bytes.Equal(back, data) {
		t.Fatal("data differs")
	}
	// Plain HTTP still serves beside it.
	if _, err := sdkClient(g, g.AccessKey, g.SecretKey).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("tlsb"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	// An untrusting client fails the handshake.
	bad := s3.New(s3.Options{BaseEndpoint: aws.String("https://" + tlsAddr), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(g.AccessKey, g.SecretKey, "")})
	if _, err := bad.ListBuckets(ctx, &s3.ListBucketsInput{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate accepted: %v", err)
	}

	// cairn admin trusts a private CA through SSL_CERT_FILE.
	admin := exec.Command(cairnBin, "admin", "--endpoint", "https://"+tlsAddr, "bucket", "list")
	admin.Env = append(os.Environ(), "SSL_CERT_FILE="+cert, "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey)
	if out, err := admin.CombinedOutput(); err != nil || !strings.Contains(string(out), "tlsb") {
		t.Fatalf("cairn admin over HTTPS: %v %s", err, out)
	}

	requireTool(t, "python3", "-c", "import boto3")
	script := `
import boto3, io, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], aws_access_key_id=os.environ["AK"],
    aws_secret_access_key=os.environ["SK"], region_name="us-east-1", verify=os.environ["CA"])
sent = []
s3.meta.events.register("before-send.s3.PutObject", lambda request, **kw: sent.append(dict(request.headers)))
body = b"boto3 over tls " * 100000
r = s3.put_object(Bucket="tlsb", Key="py", Body=io.BytesIO(body))
trailer = sent[-1].get("x-amz-trailer") or sent[-1].get("X-Amz-Trailer")
assert trailer, "boto3 sent no trailing checksum: %r" % sent[-1]
got = s3.get_object(Bucket="tlsb", Key="py")["Body"].read()
assert got == body, "data differs"
print("ok", trailer, r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-checksum-crc32", ""))
`
	cmd := exec.Command("python3", "-c", script)
	cmd.Env = append(os.Environ(), "EP=https://"+tlsAddr, "AK="+g.AccessKey, "SK="+g.SecretKey, "CA="+cert)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("boto3 over TLS: %v\n%s\ngateway log tail:\n%s", err, out, tail(g.Log.String(), 3000))
	}
	t.Logf("boto3: %s", strings.TrimSpace(string(out)))
}

// spyClient lets a test see the requests an SDK sends.
type spyClient struct {
	c   *http.Client
	see func(*http.Request)
}

func (s spyClient) Do(r *http.Request) (*http.Response, error) {
	s.see(r)
	return s.c.Do(r)
}

// snsCreateTopic sends a SigV4-signed CreateTopic (query protocol, POST)
// and returns the status and body.
func snsCreateTopic(t *testing.T, hc *http.Client, endpoint, ak, sk, name string, attrs map[string]string) (int, string) {
	t.Helper()
	form := url.Values{"Action": {"CreateTopic"}, "Name": {name}}
	i := 1
	for k, v := range attrs {
		form.Set("Attributes.entry."+itoa(i)+".key", k)
		form.Set("Attributes.entry."+itoa(i)+".value", v)
		i++
	}
	return snsCall(t, hc, endpoint, ak, sk, form)
}

// snsCall sends a SigV4-signed SNS query-protocol POST.
func snsCall(t *testing.T, hc *http.Client, endpoint, ak, sk string, form url.Values) (int, string) {
	t.Helper()
	body := form.Encode()
	r, err := http.NewRequest("POST", endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sum := sha256Hex(body)
	r.Header.Set("X-Amz-Content-Sha256", sum)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, r, sum, "sns", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

// TestTopicSecretsNeedTLS: endpoint credentials are refused over plain
// HTTP, accepted over HTTPS, and accepted over HTTP only when the operator
// opts in (allow-insecure-endpoint-secrets).
func TestTopicSecretsNeedTLS(t *testing.T) {
	cert, key, pool := writeTestCert(t)
	tlsAddr := freeAddr(t)
	g := StartGateway(t, "--tls-listen", tlsAddr, "--tls-cert", cert, "--tls-key", key)
	hs := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	withSecret := map[string]string{"push-endpoint": "amqp://bob:hunter2pw@127.0.0.1:5672", "amqp-exchange": "ex"}
	status, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, g.AccessKey, g.SecretKey, "plain", withSecret)
	if status != 400 || !strings.Contains(body, "HTTPS") {
		t.Fatalf("credentials over plain HTTP: %d %s", status, body)
	}
	if status, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, g.AccessKey, g.SecretKey, "nosecret",
		map[string]string{"push-endpoint": "amqp://127.0.0.1:5672", "amqp-exchange": "ex"}); status != 200 {
		t.Fatalf("no credentials over plain HTTP: %d %s", status, body)
	}
	if status, body := snsCreateTopic(t, hs, "https://"+tlsAddr, g.AccessKey, g.SecretKey, "secure", withSecret); status != 200 {
		t.Fatalf("credentials over HTTPS: %d %s", status, body)
	}

	// SetTopicAttributes: a new credential needs TLS too.
	set := url.Values{"Action": {"SetTopicAttributes"}, "TopicArn": {"arn:aws:sns:default::nosecret"},
		"AttributeName": {"push-endpoint"}, "AttributeValue": {"amqp://bob:hunter3pw@127.0.0.1:5672"}}
	if status, body := snsCall(t, http.DefaultClient, g.Endpoint, g.AccessKey, g.SecretKey, set); status != 400 || !strings.Contains(body, "HTTPS") {
		t.Fatalf("SetTopicAttributes with credentials over plain HTTP: %d %s", status, body)
	}
	if status, body := snsCall(t, hs, "https://"+tlsAddr, g.AccessKey, g.SecretKey, set); status != 200 {
		t.Fatalf("SetTopicAttributes with credentials over HTTPS: %d %s", status, body)
	}

	g2 := StartGateway(t, "--allow-insecure-endpoint-secrets=true")
	if status, body := snsCreateTopic(t, http.DefaultClient, g2.Endpoint, g2.AccessKey, g2.SecretKey, "optin", withSecret); status != 200 {
		t.Fatalf("credentials over HTTP with the opt-in: %d %s", status, body)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
