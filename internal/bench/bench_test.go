package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func TestAppendSmoke(t *testing.T) {
	r, err := RunAppend(context.Background(), AppendConfig{Clients: 4, Duration: 200 * time.Millisecond, Size: 512, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Plain.Ops == 0 || r.Guarded.Ops == 0 || r.Ratio <= 0 || r.Plain.P50Ms > r.Plain.MaxMs {
		t.Fatalf("result %+v", r)
	}
	b, _ := json.Marshal(r)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["guarded_ops_per_sec"] == nil || m["clients"] == nil {
		t.Fatalf("json %s", b)
	}
}

func TestObjstoreSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 4 MiB objects")
	}
	r, err := RunObjstore(context.Background(), ObjstoreConfig{Clients: []int{1, 3}, LargeClients: []int{2}, Duration: 150 * time.Millisecond, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.OmapSet) != 2 || len(r.OmapGet) != 2 || len(r.SmallWrite) != 2 || len(r.WriteFull) != 1 ||
		r.OmapGet[1].Ops == 0 || r.RawMBPerSec <= 0 || r.WriteFullRatio <= 0 {
		t.Fatalf("result %+v", r)
	}
}

func TestValidate(t *testing.T) {
	c := AppendConfig{Clients: -1, Duration: -1, Size: -5}
	if err := c.Validate(); err == nil {
		t.Fatal("bad config accepted")
	}
	o := ObjstoreConfig{Clients: []int{0}}
	o.EnsureDefaults()
	if err := o.Validate(); err == nil {
		t.Fatal("bad config accepted")
	}
}
