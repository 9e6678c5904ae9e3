package accesslog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/s3err"
)

const allowPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
 "Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:PutObject",
 "Resource":"arn:aws:s3:::logs/%s*",
 "Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::%s"}}}]}`

func setup(t *testing.T) (*driver.Driver, objstore.Store) {
	t.Helper()
	ctx := context.Background()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 1, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for _, b := range []string{"src", "logs", "other"} {
		if err := d.CreateBucket(ctx, "alice", b, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	return d, st
}

func setPolicy(t *testing.T, d *driver.Driver, bucket, policy string) {
	t.Helper()
	if err := d.UpdateInstance(context.Background(), bucket, func(inst *driver.Instance) error {
		inst.Access.Policy = policy
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func newLogger(t *testing.T, d *driver.Driver, boot string) *Logger {
	t.Helper()
	l, err := New(Options{Driver: d, IO: d.LogIO(), BootID: boot})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func code(err error) string {
	var e *s3err.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestPutChecksTarget(t *testing.T) {
	d, _ := setup(t)
	ctx := context.Background()
	l := newLogger(t, d, "g1")
	cfg := func(target string) *driver.BucketLogging {
		return &driver.BucketLogging{TargetBucket: target, TargetPrefix: "src/"}
	}
	for _, tc := range []struct {
		name   string
		cfg    *driver.BucketLogging
		grants bool
		want   string
	}{
		{"missing target", cfg("nope"), false, "InvalidTargetBucketForLogging"},
		{"target is source", cfg("src"), false, "InvalidTargetBucketForLogging"},
		{"no policy", cfg("logs"), false, "AccessDenied"},
		{"bad type", &driver.BucketLogging{TargetBucket: "logs", Type: "Verbose"}, false, "InvalidArgument"},
		{"filter needs journal", &driver.BucketLogging{TargetBucket: "logs", Filter: []driver.LoggingFilterRule{{Name: "prefix", Value: "a"}}}, false, "InvalidArgument"},
	} {
		if got := code(l.Put(ctx, "src", tc.cfg, tc.grants)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A policy for another source bucket, or another prefix, is not enough.
	setPolicy(t, d, "logs", fmt.Sprintf(allowPolicy, "src/", "other"))
	if got := code(l.Put(ctx, "src", cfg("logs"), false)); got != "AccessDenied" {
		t.Errorf("policy for another source: %q", got)
	}
	setPolicy(t, d, "logs", fmt.Sprintf(allowPolicy, "elsewhere/", "src"))
	if got := code(l.Put(ctx, "src", cfg("logs"), false)); got != "AccessDenied" {
		t.Errorf("policy for another prefix: %q", got)
	}
	setPolicy(t, d, "logs", fmt.Sprintf(allowPolicy, "src/", "src"))
	if got := code(l.Put(ctx, "src", cfg("logs"), true)); got != "NotImplemented" {
		t.Errorf("TargetGrants: %q", got)
	}
	if err := l.Put(ctx, "src", cfg("logs"), false); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	got, _ := l.Enabled(ctx, "src")
	if got == nil || got.TargetBucket != "logs" || got.Type != driver.LoggingStandard || got.KeyFormat != driver.KeyFormatSimple {
		t.Fatalf("stored config %+v", got)
	}
	// The target may not log itself (loops), nor to a logged bucket.
	setPolicy(t, d, "src", fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::src/*"}]}`))
	if got := code(l.Put(ctx, "other", cfg("src"), false)); got != "InvalidTargetBucketForLogging" {
		t.Errorf("target with logging: %q", got)
	}
	if err := l.Put(ctx, "src", nil, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Enabled(ctx, "src"); got != nil {
		t.Fatalf("disabled but %+v", got)
	}
}

// logObjects returns the delivered objects under prefix, key -> body.
func logObjects(t *testing.T, d *driver.Driver, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "logs", Prefix: prefix, MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range res.Objects {
		_, rc, err := d.GetObject(ctx, "logs", o.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		out[o.Key] = string(b)
	}
	return out
}

func lines(objs map[string]string) []string {
	var out []string
	for _, body := range objs {
		out = append(out, strings.Split(strings.TrimSuffix(body, "\n"), "\n")...)
	}
	sort.Strings(out)
	return out
}

func TestStandardRecordsDelivered(t *testing.T) {
	d, _ := setup(t)
	ctx := context.Background()
	setPolicy(t, d, "logs", fmt.Sprintf(allowPolicy, "", "src"))
	l := newLogger(t, d, "g1")
	if err := l.Put(ctx, "src", &driver.BucketLogging{TargetBucket: "logs", TargetPrefix: "p/", KeyFormat: driver.KeyFormatPartitioned, DateSource: "EventTime"}, false); err != nil {
		t.Fatal(err)
	}
	cfg, inst := l.Enabled(ctx, "src")
	when := time.Date(2019, 2, 6, 0, 0, 38, 0, time.UTC)
	for i := 0; i < 3; i++ {
		r := &Record{BucketOwner: "alice", Bucket: "src", Time: when, RemoteIP: "127.0.0.1", Requester: "alice",
			RequestID: fmt.Sprint("R", i), Operation: "REST.PUT.OBJECT", Key: fmt.Sprintf("dir/k %d", i),
			RequestURI: "PUT /src/dir/k%20" + fmt.Sprint(i) + " HTTP/1.1", HTTPStatus: 200, BytesSent: 0, ObjectSize: 4096,
			TotalTime: 12 * time.Millisecond, TurnAroundTime: 3 * time.Millisecond, UserAgent: `ua "quoted"`,
			HostID: "h", SigVersion: "SigV4", AuthType: "AuthHeader", HostHeader: "127.0.0.1:1"}
		if err := l.Log(ctx, inst, cfg, r); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := l.Flush(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("flushed %v", keys)
	}
	re := regexp.MustCompile(`^p/alice/us-east-1/src/\d{4}/\d{2}/\d{2}/\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-[0-9A-F]{16}$`)
	if !re.MatchString(keys[0]) {
		t.Fatalf("key %q does not match AWS's partitioned format", keys[0])
	}
	ls := lines(logObjects(t, d, "p/"))
	if len(ls) != 3 {
		t.Fatalf("records %q", ls)
	}
	f, err := SplitFields(ls[0])
	if err != nil || len(f) != StandardFields {
		t.Fatalf("fields %q: %v", f, err)
	}
	want := []string{"alice", "src", "06/Feb/2019:00:00:38 +0000", "127.0.0.1", "alice", "R0", "REST.PUT.OBJECT", "dir/k%200",
		"PUT /src/dir/k%200 HTTP/1.1", "200", "-", "-", "4096", "12", "3", "-", `ua "quoted"`, "-", "h", "SigV4", "-", "AuthHeader", "127.0.0.1:1", "-", "-", "-"}
	for i := range want {
		if f[i] != want[i] {
			t.Errorf("field %d = %q, want %q", i, f[i], want[i])
		}
	}
	// Nothing pending is left.
	if names, _ := l.list(ctx, ""); len(names) != 0 {
		t.Fatalf("pending left: %v", names)
	}
}

// Two gateways journal into one source bucket while a third flushes
// repeatedly; a gateway then "dies" (never closed) and a new one flushes:
// every record arrives exactly once.
func TestJournalSeveralGatewaysNoLoss(t *testing.T) {
	d, _ := setup(t)
	ctx := context.Background()
	setPolicy(t, d, "logs", fmt.Sprintf(allowPolicy, "", "src"))
	a, b := newLogger(t, d, "ga"), newLogger(t, d, "gb")
	if err := a.Put(ctx, "src", &driver.BucketLogging{TargetBucket: "logs", Type: driver.LoggingJournal}, false); err != nil {
		t.Fatal(err)
	}
	cfg, inst := a.Enabled(ctx, "src")
	const n = 200
	errc := make(chan error, 2)
	for gi, g := range []*Logger{a, b} {
		go func() {
			for i := 0; i < n; i++ {
				r := &Record{BucketOwner: "alice", Bucket: "src", Time: time.Now(), Operation: "REST.PUT.OBJECT",
					Key: fmt.Sprintf("g%d-%04d", gi, i), ObjectSize: 1, ETag: `"e"`}
				if err := g.Log(ctx, inst, cfg, r); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	c := newLogger(t, d, "gc")
	done := 0
	for done < 2 {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
			done++
		default:
			if _, err := c.Flush(ctx, "src"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// a and b are never closed: their open objects are a crash's leftovers.
	if _, err := newLogger(t, d, "gd").Flush(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	ls := lines(logObjects(t, d, ""))
	if len(ls) != 2*n {
		t.Fatalf("%d records, want %d", len(ls), 2*n)
	}
	seen := map[string]bool{}
	for _, line := range ls {
		f, err := SplitFields(line)
		if err != nil || len(f) != 8 {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if seen[f[4]] {
			t.Fatalf("record for %s twice", f[4])
		}
		seen[f[4]] = true
		if f[3] != "REST.PUT.OBJECT" || f[5] != "1" || f[7] != "e" {
			t.Fatalf("journal line %q", line)
		}
	}
}

// A roll that crashed after sealing (or after delivering, before removing)
// is finished by the next one, to the same key.
func TestRollIdempotent(t *testing.T) {
	d, _ := setup(t)
	ctx := context.Background()
	setPolicy(t, d, "logs", fmt.Sprintf(allowPolicy, "", "src"))
	l := newLogger(t, d, "g1")
	if err := l.Put(ctx, "src", &driver.BucketLogging{TargetBucket: "logs", Type: driver.LoggingJournal}, false); err != nil {
		t.Fatal(err)
	}
	cfg, inst := l.Enabled(ctx, "src")
	if err := l.Log(ctx, inst, cfg, &Record{Bucket: "src", Operation: "REST.PUT.OBJECT", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	names, _ := l.list(ctx, "")
	if len(names) != 1 {
		t.Fatalf("pending %v", names)
	}
	k1, err := l.roll(ctx, names[0])
	if err != nil {
		t.Fatal(err)
	}
	// Re-create the sealed pending object as if the removal never happened.
	op := objstore.NewWriteOp()
	op.Create(true)
	op.SetXattr(xattrState, stateSealed)
	op.SetXattr(xattrKey, []byte(k1))
	_, meta, _ := func() ([]byte, pendingMeta, error) { return nil, l.metaFor(inst, cfg), nil }()
	meta.Created = time.Now()
	mj := fmt.Appendf(nil, `{"source_bucket":"src","source_id":%q,"target_bucket":"logs","key_format":"Simple","roll_time":300,"created":%q}`, inst.ID, meta.Created.Format(time.RFC3339Nano))
	op.SetXattr(xattrMeta, mj)
	op.SetOmap(objstore.KV{Key: "0000000000000001", Value: []byte("same\n")})
	if err := l.io.Operate(ctx, names[0], op); err != nil {
		t.Fatal(err)
	}
	keys, err := l.Flush(ctx, "src")
	if err != nil || len(keys) != 1 || keys[0] != k1 {
		t.Fatalf("second roll: %v %v, want [%s]", keys, err, k1)
	}
	if objs := logObjects(t, d, ""); len(objs) != 1 {
		t.Fatalf("objects %v", objs)
	}
}

// TestStandardEntriesPacked: a second's standard records are appended
// compressed (a fraction of their size goes through the store), and a
// pending object holding plain entries too (an older gateway's, or
// journal records) is delivered with every record, in order.
func TestStandardEntriesPacked(t *testing.T) {
	d, _ := setup(t)
	ctx := context.Background()
	setPolicy(t, d, "logs", fmt.Sprintf(allowPolicy, "", "src"))
	l := newLogger(t, d, "g1")
	if err := l.Put(ctx, "src", &driver.BucketLogging{TargetBucket: "logs"}, false); err != nil {
		t.Fatal(err)
	}
	cfg, inst := l.Enabled(ctx, "src")
	var want []string
	logN := func(from, n int) {
		for i := from; i < from+n; i++ {
			r := &Record{BucketOwner: "alice", Bucket: "src", Time: time.Unix(1_700_000_000, 0), Requester: "alice",
				RequestID: fmt.Sprintf("R%04d", i), Operation: "REST.PUT.OBJECT", Key: fmt.Sprintf("k%04d", i),
				RequestURI: fmt.Sprintf("PUT /src/k%04d HTTP/1.1", i), HTTPStatus: 200, ObjectSize: 4096, UserAgent: "aws-sdk-go-v2/1.30"}
			want = append(want, string(AppendStandard(nil, r)))
			if err := l.Log(ctx, inst, cfg, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	logN(0, 200)
	l.flushBuffers(ctx)
	// A plain entry, as an older gateway appends them.
	bl := l.bucket(inst.ID)
	plain := &Record{BucketOwner: "alice", Bucket: "src", Time: time.Unix(1_700_000_000, 0), Operation: "REST.GET.OBJECT", Key: "plain"}
	want = append(want, string(AppendStandard(nil, plain)))
	if err := l.append(ctx, bl, bl.bufMeta, AppendStandard(nil, plain), false); err != nil {
		t.Fatal(err)
	}
	logN(200, 100)
	l.flushBuffers(ctx)

	names, err := l.list(ctx, "")
	if err != nil || len(names) != 1 {
		t.Fatalf("pending %v %v", names, err)
	}
	rop := objstore.NewReadOp()
	vals := rop.GetOmapValues("", "", 100)
	if err := l.io.OperateRead(ctx, names[0], rop); err != nil {
		t.Fatal(err)
	}
	stored, raw := 0, len(strings.Join(want, ""))
	for _, kv := range vals.Pairs {
		stored += len(kv.Value)
	}
	if len(vals.Pairs) != 3 || vals.Pairs[0].Value[0] != packedEntry || vals.Pairs[1].Value[0] == packedEntry || stored*3 > raw {
		t.Fatalf("%d entries, %d bytes stored for %d bytes of records", len(vals.Pairs), stored, raw)
	}
	if _, err := l.Flush(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	objs := logObjects(t, d, "")
	if len(objs) != 1 {
		t.Fatalf("%d log objects", len(objs))
	}
	for _, body := range objs {
		if body != strings.Join(want, "") {
			t.Fatalf("delivered %d bytes, want the %d bytes of records in order", len(body), raw)
		}
	}
}
