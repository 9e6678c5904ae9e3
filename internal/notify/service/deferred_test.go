package service

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestEventNeverOutlivesDeferredWrite: a write whose sync is deferred to a
// later commit point (bucket logging's journal record, which a kill -9
// may never write) is durable by the time its event can be delivered: a
// crash at that instant (a clone of the synced state) keeps the object.
// Persistent topics (the delivery reads the queue entry) and push topics.
func TestEventNeverOutlivesDeferredWrite(t *testing.T) {
	for _, persistent := range []bool{true, false} {
		name := map[bool]string{true: "persistent", false: "push"}[persistent]
		t.Run(name, func(t *testing.T) {
			var pushed atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pushed.Add(1) }))
			defer srv.Close()
			fs := vfs.NewCrashableMem()
			e := newEnvOn(t, openStore(t, "/db", fs), Options{})
			attrs := map[string]string{"push-endpoint": srv.URL + "/"}
			if persistent {
				attrs["persistent"] = "true"
			}
			e.topic(t, "jt", attrs)
			e.configure(t, notifConf(topicConf("n", "jt", "")))
			logIO, err := e.store.IOContext(context.Background(), driver.PoolLog)
			if err != nil {
				t.Fatal(err)
			}
			// As the journal hook runs a write: every sync deferred to
			// the record's append, which comes after (and here never).
			ctx := objstore.WithDeferredSync(reqCtx(), logIO)
			body := []byte("journaled")
			oi, err := e.drv.PutObject(ctx, driver.PutObjectInput{Bucket: "bk1", Key: "k", Body: bytes.NewReader(body), Size: int64(len(body))})
			if err != nil {
				t.Fatal(err)
			}
			// The event can go out now: the delivery reads the entry, or
			// the endpoint has it.
			if persistent {
				if n := len(e.events(t, "jt")); n != 1 {
					t.Fatalf("%d events in the queue", n)
				}
			} else if pushed.Load() != 1 {
				t.Fatalf("%d pushes", pushed.Load())
			}
			crashed := openStore(t, "/db", fs.CrashClone(vfs.CrashCloneCfg{}))
			d2, err := driver.New(context.Background(), driver.Options{Store: crashed})
			if err != nil {
				t.Fatal(err)
			}
			defer d2.Close()
			got, err := d2.HeadObject(context.Background(), "bk1", "k")
			if err != nil {
				t.Fatalf("the event went out, but a crash loses the write it reports: %v", err)
			}
			if got.ETag != oi.ETag {
				t.Fatalf("after the crash: ETag %s, want %s", got.ETag, oi.ETag)
			}
		})
	}
}
