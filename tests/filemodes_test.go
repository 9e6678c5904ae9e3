package tests

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// groupOrOther lists every path under dir that a group or other user may
// access at all.
func groupOrOther(t *testing.T, dir string) (open []string, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files++
		}
		if fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o077 != 0 {
			open = append(open, fmt.Sprintf("%s %s", fi.Mode().Perm(), strings.TrimPrefix(path, dir)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return open, files
}

// The store's files hold users' secret keys in clear: every file a real
// gateway creates is 0600 and every directory 0700, including pebble's
// files made after start (flushes) and blob files of large objects.
func TestDataDirPrivate(t *testing.T) {
	g := StartGateway(t, "--notif-scan-interval", "1s")
	createUser(t, g, "modeuser")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("modes")}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), 3<<20) // a blob file
	for i, body := range [][]byte{[]byte("small"), big} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("modes"), Key: aws.String(fmt.Sprint("k", i)),
			Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	awsCLI(t, g, "sns", "create-topic", "--name=modetopic",
		`--attributes={"push-endpoint": "http://127.0.0.1:1", "persistent": "true"}`)
	// A restart flushes the memtable to new sstables and rewrites the
	// MANIFEST/OPTIONS files: files created well after start.
	g.Stop()
	g.Start()
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("modes"), Key: aws.String("k1")}); err != nil {
		t.Fatal(err)
	}
	open, files := groupOrOther(t, g.DataDir)
	if len(open) > 0 {
		t.Fatalf("group/other may access:\n%s", strings.Join(open, "\n"))
	}
	blobs, _ := filepath.Glob(filepath.Join(g.DataDir, "store", "blobs", "*"))
	ssts, _ := filepath.Glob(filepath.Join(g.DataDir, "store", "db", "*.sst"))
	if files < 10 || len(blobs) == 0 || len(ssts) == 0 {
		t.Fatalf("walked %d files, %d blobs, %d sstables: the test saw too little", files, len(blobs), len(ssts))
	}
	for _, f := range []string{"admin.credentials", "gateway.id"} {
		if _, err := os.Stat(filepath.Join(g.DataDir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

// A data directory left group/other-readable (by an older version or an
// operator) is tightened at start, with a warning per path.
func TestDataDirTightenedAtStart(t *testing.T) {
	g := StartGateway(t)
	g.Stop()
	loose := []string{"", "store", "store/db", "store/blobs", "admin.credentials", "gateway.id"}
	for _, p := range loose {
		path := filepath.Join(g.DataDir, p)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if fi.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	g.Start()
	for _, p := range loose {
		fi, err := os.Stat(filepath.Join(g.DataDir, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%q still %s after start", p, fi.Mode().Perm())
		}
	}
	if n := strings.Count(g.Log.String(), "removed group/other access"); n != len(loose) {
		t.Errorf("%d tightening warnings, want %d:\n%s", n, len(loose), g.Log.String())
	}
}
