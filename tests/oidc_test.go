package tests

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
)

// oidcIssuer is a real OpenID Connect issuer: an HTTPS server on
// 127.0.0.1 (self-signed certificate) serving the discovery document and
// its JWKS, signing RS256 ID tokens.
type oidcIssuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
	kid string
}

func startIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &oidcIssuer{key: key, kid: "k1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "use": "sig", "alg": "RS256",
			"kid": iss.kid, "n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	})
	iss.srv = httptest.NewTLSServer(mux) // listens on 127.0.0.1
	t.Cleanup(iss.srv.Close)
	return iss
}

// thumbprint is the SHA-1 of the issuer's certificate, as AWS lists it.
func (i *oidcIssuer) thumbprint() string {
	sum := sha1.Sum(i.srv.Certificate().Raw)
	return hex.EncodeToString(sum[:])
}

// token signs claims (iss, iat added) with key.
func (i *oidcIssuer) token(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	claims["iss"] = i.srv.URL
	claims["iat"] = time.Now().Unix()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	head := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": i.kid}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(head))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(sig)
}

type staticToken string

func (s staticToken) GetIdentityToken() ([]byte, error) { return []byte(s), nil }

// TestSTSWebIdentity: an account registers a real OIDC issuer (pinned by
// its certificate's thumbprint) and a role trusting it for one subject;
// aws-sdk-go-v2's web identity provider gets credentials from an RS256 ID
// token; wrong audience, subject, signature, expiry and thumbprint fail
// with AWS's errors.
func TestSTSWebIdentity(t *testing.T) { stsWebIdentityOn(t, StartGateway(t)) }

// stsWebIdentityOn is TestSTSWebIdentity on any fresh gateway.
func stsWebIdentityOn(t *testing.T, g *Gateway) {
	ctx := context.Background()
	iss := startIssuer(t)
	acme := newAccount(t, g, "acme", "ACMEROOTKEY000000001")
	globex := newAccount(t, g, "globex", "GLOBEXROOTKEY0000001")
	rootCreds := static("ACMEROOTKEY000000001", "ACMEROOTKEY000000001-secret")
	root := iamWith(g, rootCreds)
	rootS3 := s3With(g, rootCreds)
	if _, err := rootS3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("acme-data")}); err != nil {
		t.Fatal(err)
	}
	if _, err := rootS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a"), Body: strings.NewReader("A")}); err != nil {
		t.Fatal(err)
	}

	cp, err := root.CreateOpenIDConnectProvider(ctx, &iam.CreateOpenIDConnectProviderInput{Url: aws.String(iss.srv.URL),
		ClientIDList: []string{"cairn-app"}, ThumbprintList: []string{iss.thumbprint()}})
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimPrefix(iss.srv.URL, "https://")
	provARN := "arn:aws:iam::" + acme + ":oidc-provider/" + id
	if aws.ToString(cp.OpenIDConnectProviderArn) != provARN {
		t.Fatalf("provider ARN %s, want %s", aws.ToString(cp.OpenIDConnectProviderArn), provARN)
	}
	if _, err := root.CreateOpenIDConnectProvider(ctx, &iam.CreateOpenIDConnectProviderInput{Url: aws.String(iss.srv.URL), ClientIDList: []string{"x"}}); apiCode(err) != "EntityAlreadyExists" {
		t.Fatalf("provider again: %v", err)
	}
	if _, err := root.CreateOpenIDConnectProvider(ctx, &iam.CreateOpenIDConnectProviderInput{Url: aws.String("http://insecure.example"), ClientIDList: []string{"x"}}); apiCode(err) != "InvalidInput" {
		t.Fatalf("http provider: %v", err)
	}
	gp, err := root.GetOpenIDConnectProvider(ctx, &iam.GetOpenIDConnectProviderInput{OpenIDConnectProviderArn: aws.String(provARN)})
	if err != nil || aws.ToString(gp.Url) != id || len(gp.ClientIDList) != 1 || gp.ThumbprintList[0] != iss.thumbprint() {
		t.Fatalf("GetOpenIDConnectProvider: %+v %v", gp, err)
	}
	if lp, err := root.ListOpenIDConnectProviders(ctx, &iam.ListOpenIDConnectProvidersInput{}); err != nil || len(lp.OpenIDConnectProviderList) != 1 {
		t.Fatalf("ListOpenIDConnectProviders: %+v %v", lp, err)
	}
	if _, err := iamWith(g, static("GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret")).GetOpenIDConnectProvider(ctx,
		&iam.GetOpenIDConnectProviderInput{OpenIDConnectProviderArn: aws.String(provARN)}); apiCode(err) != "AccessDenied" {
		t.Fatalf("globex reads acme's provider: %v", err)
	}

	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provARN + `"},
	  "Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{"` + id + `:sub":"user-1","` + id + `:aud":"cairn-app"}}}]}`
	if _, err := root.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("WebApp"), AssumeRolePolicyDocument: aws.String(trust)}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("WebApp"), PolicyArn: aws.String("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")}); err != nil {
		t.Fatal(err)
	}
	roleARN := "arn:aws:iam::" + acme + ":role/WebApp"
	anon := sts.New(sts.Options{BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1"})
	claims := func(sub, aud string, exp time.Duration) map[string]any {
		return map[string]any{"sub": sub, "aud": aud, "exp": time.Now().Add(exp).Unix()}
	}

	// The SDK's web identity provider, as a pod with a projected token.
	tok := iss.token(t, iss.key, claims("user-1", "cairn-app", 10*time.Minute))
	prov := stscreds.NewWebIdentityRoleProvider(anon, roleARN, staticToken(tok), func(o *stscreds.WebIdentityRoleOptions) {
		o.RoleSessionName = "pod-1"
	})
	web := s3With(g, aws.NewCredentialsCache(prov))
	if _, err := web.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); err != nil {
		t.Fatalf("web identity session GET: %v", err)
	}
	if _, err := web.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("w"), Body: strings.NewReader("x")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("web identity session PUT (read-only role): %v", err)
	}
	out, err := anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: aws.String(roleARN),
		RoleSessionName: aws.String("s1"), WebIdentityToken: aws.String(tok)})
	if err != nil || aws.ToString(out.SubjectFromWebIdentityToken) != "user-1" || aws.ToString(out.Audience) != "cairn-app" ||
		aws.ToString(out.AssumedRoleUser.Arn) != "arn:aws:sts::"+acme+":assumed-role/WebApp/s1" {
		t.Fatalf("AssumeRoleWithWebIdentity: %+v %v", out, err)
	}
	// A managed session policy that allows no S3 action leaves the
	// read-only role's session without S3 reads (the intersection).
	narrowed := s3With(g, aws.NewCredentialsCache(stscreds.NewWebIdentityRoleProvider(anon, roleARN, staticToken(tok), func(o *stscreds.WebIdentityRoleOptions) {
		o.RoleSessionName = "pod-2"
		o.PolicyARNs = []ststypes.PolicyDescriptorType{{Arn: aws.String("arn:aws:iam::aws:policy/AmazonSNSReadOnlyAccess")}}
	})))
	if _, err := narrowed.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("acme-data"), Key: aws.String("a")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("web identity session with an SNS-only managed session policy reads S3: %v", err)
	}
	if _, err := anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: aws.String(roleARN),
		RoleSessionName: aws.String("s1"), WebIdentityToken: aws.String(tok),
		PolicyArns: []ststypes.PolicyDescriptorType{{Arn: aws.String("arn:aws:iam::aws:policy/NoSuchPolicy")}}}); apiCode(err) != "MalformedPolicyDocument" {
		t.Fatalf("web identity with an unknown managed session policy: %v", err)
	}

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		tok, role, code string
	}{
		"other subject":   {iss.token(t, iss.key, claims("user-2", "cairn-app", time.Minute)), roleARN, "AccessDenied"},
		"other audience":  {iss.token(t, iss.key, claims("user-1", "other-app", time.Minute)), roleARN, "InvalidIdentityToken"},
		"expired":         {iss.token(t, iss.key, claims("user-1", "cairn-app", -5*time.Minute)), roleARN, "ExpiredTokenException"},
		"forged":          {iss.token(t, other, claims("user-1", "cairn-app", time.Minute)), roleARN, "InvalidIdentityToken"},
		"garbage":         {"a.b.c", roleARN, "InvalidIdentityToken"},
		"no provider":     {tok, "arn:aws:iam::" + globex + ":role/WebApp", "InvalidIdentityToken"},
		"tampered claims": {strings.Replace(tok, strings.Split(tok, ".")[1], base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"user-1","aud":"cairn-app","exp":9999999999,"iss":"`+iss.srv.URL+`"}`)), 1), roleARN, "InvalidIdentityToken"},
	} {
		_, err := anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: aws.String(c.role),
			RoleSessionName: aws.String("s1"), WebIdentityToken: aws.String(c.tok)})
		if apiCode(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}

	g2 := iamWith(g, static("GLOBEXROOTKEY0000001", "GLOBEXROOTKEY0000001-secret"))

	// Provider updates apply to the next call: a removed client id, a
	// wrong thumbprint; both restored; idempotent adds and removes;
	// another account's provider is out of reach.
	pARN := cp.OpenIDConnectProviderArn
	assumeWeb := func() error {
		_, err := anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: aws.String(roleARN),
			RoleSessionName: aws.String("s1"), WebIdentityToken: aws.String(tok)})
		return err
	}
	if _, err := root.RemoveClientIDFromOpenIDConnectProvider(ctx, &iam.RemoveClientIDFromOpenIDConnectProviderInput{OpenIDConnectProviderArn: pARN, ClientID: aws.String("cairn-app")}); err != nil {
		t.Fatal(err)
	}
	if err := assumeWeb(); apiCode(err) != "InvalidIdentityToken" {
		t.Fatalf("token for a removed client id: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := root.AddClientIDToOpenIDConnectProvider(ctx, &iam.AddClientIDToOpenIDConnectProviderInput{OpenIDConnectProviderArn: pARN, ClientID: aws.String("cairn-app")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.RemoveClientIDFromOpenIDConnectProvider(ctx, &iam.RemoveClientIDFromOpenIDConnectProviderInput{OpenIDConnectProviderArn: pARN, ClientID: aws.String("never-added")}); err != nil {
		t.Fatalf("removing an absent client id: %v", err)
	}
	if gp, err := root.GetOpenIDConnectProvider(ctx, &iam.GetOpenIDConnectProviderInput{OpenIDConnectProviderArn: pARN}); err != nil || len(gp.ClientIDList) != 1 {
		t.Fatalf("client ids after adding one twice: %+v %v", gp, err)
	}
	if err := assumeWeb(); err != nil {
		t.Fatalf("token after the client id came back: %v", err)
	}
	if _, err := root.UpdateOpenIDConnectProviderThumbprint(ctx, &iam.UpdateOpenIDConnectProviderThumbprintInput{OpenIDConnectProviderArn: pARN, ThumbprintList: []string{strings.Repeat("1", 40)}}); err != nil {
		t.Fatal(err)
	}
	if err := assumeWeb(); apiCode(err) != "IDPCommunicationError" {
		t.Fatalf("issuer under a wrong thumbprint: %v", err)
	}
	if _, err := root.UpdateOpenIDConnectProviderThumbprint(ctx, &iam.UpdateOpenIDConnectProviderThumbprintInput{OpenIDConnectProviderArn: pARN, ThumbprintList: []string{iss.thumbprint()}}); err != nil {
		t.Fatal(err)
	}
	if err := assumeWeb(); err != nil {
		t.Fatalf("issuer under its thumbprint again: %v", err)
	}
	for name, c := range map[string]struct {
		call func() error
		code string
	}{
		"bad thumbprint": {func() error {
			_, err := root.UpdateOpenIDConnectProviderThumbprint(ctx, &iam.UpdateOpenIDConnectProviderThumbprintInput{OpenIDConnectProviderArn: pARN, ThumbprintList: []string{"xyz"}})
			return err
		}, "InvalidInput"},
		"six thumbprints": {func() error {
			tp := strings.Repeat("1", 40)
			_, err := root.UpdateOpenIDConnectProviderThumbprint(ctx, &iam.UpdateOpenIDConnectProviderThumbprintInput{OpenIDConnectProviderArn: pARN, ThumbprintList: []string{tp, tp, tp, tp, tp, tp}})
			return err
		}, "LimitExceeded"},
		"missing provider": {func() error {
			_, err := root.AddClientIDToOpenIDConnectProvider(ctx, &iam.AddClientIDToOpenIDConnectProviderInput{OpenIDConnectProviderArn: aws.String("arn:aws:iam::" + acme + ":oidc-provider/nowhere.example"), ClientID: aws.String("x")})
			return err
		}, "NoSuchEntity"},
		"another account's provider": {func() error {
			_, err := g2.AddClientIDToOpenIDConnectProvider(ctx, &iam.AddClientIDToOpenIDConnectProviderInput{OpenIDConnectProviderArn: pARN, ClientID: aws.String("evil")})
			return err
		}, "AccessDenied"},
	} {
		if err := c.call(); apiCode(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}

	// globex registers the same issuer with a wrong thumbprint: the
	// gateway refuses to fetch its keys.
	if _, err := g2.CreateOpenIDConnectProvider(ctx, &iam.CreateOpenIDConnectProviderInput{Url: aws.String(iss.srv.URL),
		ClientIDList: []string{"cairn-app"}, ThumbprintList: []string{strings.Repeat("0", 40)}}); err != nil {
		t.Fatal(err)
	}
	gtrust := strings.ReplaceAll(trust, acme, globex)
	if _, err := g2.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("WebApp"), AssumeRolePolicyDocument: aws.String(gtrust)}); err != nil {
		t.Fatal(err)
	}
	if _, err := anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: aws.String("arn:aws:iam::" + globex + ":role/WebApp"),
		RoleSessionName: aws.String("s1"), WebIdentityToken: aws.String(tok)}); apiCode(err) != "IDPCommunicationError" {
		t.Fatalf("wrong thumbprint: %v", err)
	}

	// Deleting the provider stops new sessions.
	if _, err := root.DeleteOpenIDConnectProvider(ctx, &iam.DeleteOpenIDConnectProviderInput{OpenIDConnectProviderArn: aws.String(provARN)}); err != nil {
		t.Fatal(err)
	}
	if _, err := anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: aws.String(roleARN),
		RoleSessionName: aws.String("s1"), WebIdentityToken: aws.String(tok)}); apiCode(err) != "InvalidIdentityToken" {
		t.Fatalf("after the provider was deleted: %v", err)
	}
}
