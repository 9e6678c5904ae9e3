package service

import (
	"context"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

// Records carry versionId; a delete that writes a marker is
// ObjectRemoved:DeleteMarkerCreated (with the marker's id), a delete of a
// version ObjectRemoved:Delete (with the removed version's id), and the
// per-key sequencer keeps increasing.
func TestVersionedEvents(t *testing.T) {
	e := newEnv(t, Options{})
	e.topic(t, "vt", map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true"})
	e.configure(t, notifConf(topicConf("n1", "vt", "")))
	ctx := context.Background()
	if err := e.drv.PutBucketVersioning(ctx, "bk1", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1, err := e.put(t, "k", []byte("one"), driver.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	dm, err := e.drv.DeleteObjectVersion(reqCtx(), driver.DeleteObjectInput{Bucket: "bk1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.drv.DeleteObjectVersion(reqCtx(), driver.DeleteObjectInput{Bucket: "bk1", Key: "k", VersionID: v1.VersionID}); err != nil {
		t.Fatal(err)
	}
	recs := e.events(t, "vt")
	want := []struct{ name, vid string }{
		{"ObjectCreated:Put", v1.VersionID},
		{"ObjectRemoved:DeleteMarkerCreated", dm.VersionID},
		{"ObjectRemoved:Delete", v1.VersionID},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records", len(recs))
	}
	for i, w := range want {
		r := recs[i]
		if r.EventName != w.name || r.S3.Object.VersionID != w.vid || w.vid == "" {
			t.Fatalf("record %d: %s %q, want %s %q", i, r.EventName, r.S3.Object.VersionID, w.name, w.vid)
		}
		if i > 0 && r.S3.Object.Sequencer <= recs[i-1].S3.Object.Sequencer {
			t.Fatalf("sequencer went back at record %d", i)
		}
	}
}
