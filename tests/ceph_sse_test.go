//go:build rados

package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestCephSSEModes: the SSE end-to-end body on a gateway over Ceph, and the
// probe that no plaintext marker or SSE-C key is in the RADOS data pool.
func TestCephSSEModes(t *testing.T) {
	conf, _ := cephCluster(t)
	g := startRadosGateways(t, conf, 1, sseGatewayFlags()...)[0]
	pool := radosPrefixOf(t, g) + "default.rgw.buckets.data"
	sseModesBody(t, g, func(t *testing.T) func([]byte) []string {
		dir := dumpRadosPool(t, conf, pool)
		return func(needle []byte) []string { return dataDirContains(t, dir, needle) }
	})
}

// radosPrefixOf is the --ceph-pool-prefix g was started with.
func radosPrefixOf(t *testing.T, g *Gateway) string {
	for i, a := range g.args {
		if a == "--ceph-pool-prefix" && i+1 < len(g.args) {
			return g.args[i+1]
		}
	}
	t.Fatal("gateway has no --ceph-pool-prefix")
	return ""
}

// dumpRadosPool copies every object of pool (all namespaces) into a
// directory with the rados CLI: data and xattr values (data objects carry
// no omap).
func dumpRadosPool(t *testing.T, conf, pool string) string {
	t.Helper()
	rados := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command("rados", append([]string{"-c", conf, "-p", pool}, args...)...).Output()
		if err != nil {
			t.Fatalf("rados %v: %v", args, err)
		}
		return out
	}
	var objs []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	if err := json.Unmarshal(rados("--all", "--format", "json", "ls"), &objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("pool %s is empty", pool)
	}
	dir := t.TempDir()
	for i, o := range objs {
		ns := []string{"-N", o.Namespace}
		data := rados(append(ns, "get", o.Name, "-")...)
		var meta bytes.Buffer
		for _, x := range bytes.Fields(rados(append(ns, "listxattr", o.Name)...)) {
			meta.Write(rados(append(ns, "getxattr", o.Name, string(x))...))
		}
		name := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(name+".data", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name+".meta", meta.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("probe: %d objects of %s dumped", len(objs), pool)
	return dir
}

// radosNames lists the objects of pool (default namespace) with the rados CLI.
func radosNames(t *testing.T, conf, pool string) map[string]bool {
	t.Helper()
	out, err := exec.Command("rados", "-c", conf, "-p", pool, "ls").Output()
	if err != nil {
		t.Fatalf("rados ls: %v", err)
	}
	names := map[string]bool{}
	for _, n := range strings.Fields(string(out)) {
		names[n] = true
	}
	return names
}

// TestCephSSETamper: one byte flipped in an encrypted object's RADOS data
// object makes GET fail; it never answers wrong bytes.
func TestCephSSETamper(t *testing.T) {
	conf, _ := cephCluster(t)
	g := startRadosGateways(t, conf, 1, sseGatewayFlags()...)[0]
	pool := radosPrefixOf(t, g) + "default.rgw.buckets.data"
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("tamper")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	before := radosNames(t, conf, pool)
	body := markedBody(200<<10, "CAIRN-TAMPER")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: bytes.NewReader(body), ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatal(err)
	}
	var oid string
	for n := range radosNames(t, conf, pool) {
		if !before[n] {
			if oid != "" {
				t.Fatalf("more than one new data object: %s, %s", oid, n)
			}
			oid = n
		}
	}
	if oid == "" {
		t.Fatal("no new data object")
	}
	f := filepath.Join(t.TempDir(), "obj")
	if out, err := exec.Command("rados", "-c", conf, "-p", pool, "get", oid, f).CombinedOutput(); err != nil {
		t.Fatalf("rados get: %v %s", err, out)
	}
	data, err := os.ReadFile(f)
	if err != nil || len(data) < len(body) {
		t.Fatalf("stored object: %d bytes, %v", len(data), err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("rados", "-c", conf, "-p", pool, "put", oid, f).CombinedOutput(); err != nil {
		t.Fatalf("rados put: %v %s", err, out)
	}
	for _, rg := range []*string{nil, aws.String(fmt.Sprintf("bytes=%d-%d", len(body)/2-10, len(body)/2+10))} {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("k"), Range: rg})
		if err != nil {
			continue // refused before any byte: fine
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err == nil {
			t.Fatalf("GET (range %v) of a tampered object answered %d bytes without error", aws.ToString(rg), len(got))
		}
	}
	// The object stays listed; the gateway still serves other requests.
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("k")}); err != nil {
		t.Fatalf("head after tamper: %v", err)
	}
}

// TestCephSSEGateways: two gateways over one cluster that share the keyring
// (kms-master-key, kms-keys) read each other's SSE-S3, SSE-KMS and
// bucket-key objects; lifecycle expires encrypted objects and their stripes
// are collected from the pool; a gateway with another master key cannot read
// SSE-S3 objects and answers an error, never bytes.
func TestCephSSEGateways(t *testing.T) {
	conf, _ := cephCluster(t)
	mk := make([]byte, 32)
	rand.Read(mk)
	shared := append(sseGatewayFlags(), "--kms-master-key", base64.StdEncoding.EncodeToString(mk), "--lc-debug-interval", "3s")
	gws := startRadosGateways(t, conf, 2, shared...)
	a, b := sdkClient(gws[0], gws[0].AccessKey, gws[0].SecretKey), sdkClient(gws[1], gws[1].AccessKey, gws[1].SecretKey)
	ctx := context.Background()
	bk := aws.String("ssegw")
	if _, err := a.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bk}); err != nil {
		t.Fatal(err)
	}
	put := func(c *s3.Client, key string, in *s3.PutObjectInput) []byte {
		t.Helper()
		body := markedBody(300<<10, key)
		in.Bucket, in.Key, in.Body = bk, aws.String(key), bytes.NewReader(body)
		if _, err := c.PutObject(ctx, in); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		return body
	}
	get := func(c *s3.Client, key string) ([]byte, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: aws.String(key)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	pool := radosPrefixOf(t, gws[0]) + "default.rgw.buckets.data"
	want := map[string][]byte{
		"a-s3":  put(a, "a-s3", &s3.PutObjectInput{ServerSideEncryption: types.ServerSideEncryptionAes256}),
		"a-kms": put(a, "a-kms", &s3.PutObjectInput{ServerSideEncryption: types.ServerSideEncryptionAwsKms, SSEKMSKeyId: aws.String("testkey-1")}),
	}
	if _, err := a.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: bk, ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
		Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAwsKms, KMSMasterKeyID: aws.String("testkey-2")}, BucketKeyEnabled: aws.Bool(true)}},
	}}); err != nil {
		t.Fatal(err)
	}
	want["a-dflt"] = put(a, "a-dflt", &s3.PutObjectInput{})
	beforeB := radosNames(t, conf, pool)
	want["b-dflt"] = put(b, "b-dflt", &s3.PutObjectInput{})
	want["b-s3"] = put(b, "b-s3", &s3.PutObjectInput{ServerSideEncryption: types.ServerSideEncryptionAes256})
	for key, body := range want {
		for i, c := range []*s3.Client{a, b} {
			got, err := get(c, key)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("gateway %d reads %s: %v (equal %v)", i, key, err, bytes.Equal(got, body))
			}
		}
	}
	bData := map[string]bool{}
	for n := range radosNames(t, conf, pool) {
		if !beforeB[n] {
			bData[n] = true
		}
	}

	// Lifecycle expires the a-* objects: they are gone, their encrypted
	// stripes are collected, the b-* objects still decrypt.
	if _, err := b.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: bk, LifecycleConfiguration: &types.BucketLifecycleConfiguration{
		Rules: []types.LifecycleRule{{ID: aws.String("a"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("a-")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}}},
	}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		left := radosNames(t, conf, pool)
		_, err := get(a, "a-kms")
		if apiCode(err) == "NoSuchKey" && len(left) == len(bData) {
			for n := range left {
				if !bData[n] {
					t.Fatalf("data object %s left after expiry", n)
				}
			}
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("after 3 min: a-kms %v, %d data objects, want the %d of b-*", err, len(left), len(bData))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("a-* expired and collected after %v", time.Since(start).Round(time.Second))
	for _, key := range []string{"b-dflt", "b-s3"} {
		if got, err := get(a, key); err != nil || !bytes.Equal(got, want[key]) {
			t.Fatalf("%s after lifecycle: %v", key, err)
		}
	}

	// Another master key: the same cluster, but SSE-S3 objects stay sealed.
	other := StartGateway(t, append([]string{"--backend", "rados", "--ceph-conf", conf, "--ceph-pool-prefix", radosPrefixOf(t, gws[0])}, sseGatewayFlags()...)...)
	o := sdkClient(other, other.AccessKey, other.SecretKey)
	if got, err := get(o, "b-s3"); err == nil {
		t.Fatalf("a gateway with another master key read an SSE-S3 object (%d bytes)", len(got))
	} else {
		t.Logf("another master key: %v", err)
	}
}
