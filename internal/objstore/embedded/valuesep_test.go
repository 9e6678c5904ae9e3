package embedded

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// vsepData writes objects whose data is 4 KiB (separated at 1 KiB), 64
// bytes (not separated), an omap value of 500 bytes and an overwritten
// and a removed object, and returns what must read back.
func vsepData(t *testing.T, io objstore.IOContext, tag string) map[string][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(1, uint64(len(tag))))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	want := map[string][]byte{}
	for i := range 50 {
		oid := fmt.Sprintf("%s-big-%02d", tag, i)
		want[oid] = rnd(4 << 10)
		mustOp(t, io, oid, objstore.NewWriteOp().WriteFull(want[oid]))
		oid = fmt.Sprintf("%s-small-%02d", tag, i)
		want[oid] = rnd(64)
		mustOp(t, io, oid, objstore.NewWriteOp().WriteFull(want[oid]).
			SetOmap(objstore.KV{Key: "k", Value: bytes.Repeat([]byte{byte(i)}, 500)}))
	}
	over := tag + "-over"
	mustOp(t, io, over, objstore.NewWriteOp().WriteFull(rnd(8<<10)))
	want[over] = rnd(5 << 10)
	mustOp(t, io, over, objstore.NewWriteOp().WriteFull(want[over]))
	mustOp(t, io, tag+"-gone", objstore.NewWriteOp().WriteFull(rnd(4<<10)))
	mustOp(t, io, tag+"-gone", objstore.NewWriteOp().Remove())
	return want
}

func vsepCheck(t *testing.T, io objstore.IOContext, want map[string][]byte, when string) {
	t.Helper()
	for oid, data := range want {
		rop := objstore.NewReadOp()
		d := rop.Read(0, 0)
		var om *objstore.OmapValsStep
		if bytes.Contains([]byte(oid), []byte("-small-")) {
			om = rop.GetOmapValues("", "", 0)
		}
		if err := io.OperateRead(bg, oid, rop); err != nil {
			t.Fatalf("%s: read %s: %v", when, oid, err)
		}
		if !bytes.Equal(d.Data, data) {
			t.Fatalf("%s: %s reads %d bytes, not the %d written", when, oid, len(d.Data), len(data))
		}
		if om != nil && (len(om.Pairs) != 1 || len(om.Pairs[0].Value) != 500) {
			t.Fatalf("%s: %s omap %v", when, oid, om.Pairs)
		}
	}
	if _, ok := statOf(t, io, "a-gone"); ok {
		t.Fatalf("%s: a removed object exists", when)
	}
}

// TestValueSeparation: with Options.ValueSeparation at 1 KiB, a flush puts
// 4 KiB data chunks in pebble's blob files and keeps 64-byte data and
// 500-byte omap values in sstables; everything reads back the same after a
// full compaction and a reopen. Without the option (or with it off) no
// blob file bytes are written.
func TestValueSeparation(t *testing.T) {
	for _, sep := range []int{1 << 10, -1} {
		t.Run(fmt.Sprint("sep=", sep), func(t *testing.T) {
			fs := vfs.NewMem()
			open := func() *Store {
				s, err := Open(Options{Dir: "/d", FS: fs, Classes: testRegistry(), ValueSeparation: sep})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := open()
			io := mustIO(t, s, "p")
			// Small values only: nothing separates whatever the option.
			small := map[string][]byte{}
			for i := range 100 {
				oid := fmt.Sprintf("tiny-%03d", i)
				small[oid] = bytes.Repeat([]byte{byte(i)}, 64)
				mustOp(t, io, oid, objstore.NewWriteOp().WriteFull(small[oid]).
					SetOmap(objstore.KV{Key: "entry", Value: bytes.Repeat([]byte("e"), 900)}))
			}
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
			if c := s.LSMCounters(); c.BlobFlushedBytes != 0 || c.FlushedBytes == 0 {
				t.Fatalf("64-byte data and 900-byte omap values: %d blob bytes flushed (%d table bytes)", c.BlobFlushedBytes, c.FlushedBytes)
			}
			want := vsepData(t, io, "a")
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
			c, st := s.LSMCounters(), s.LSMStats()
			if sep > 0 && (c.BlobFlushedBytes < 50*4<<10 || st.BlobFiles == 0 || st.BlobFileBytes == 0) {
				t.Fatalf("4 KiB chunks, separation on: %d blob bytes flushed, %d blob files of %d bytes", c.BlobFlushedBytes, st.BlobFiles, st.BlobFileBytes)
			}
			if c.BlobCompactedBytes != 0 { // pebble also counts a flush's blob bytes as compacted
				t.Fatalf("flushes only: %d blob bytes counted as compacted", c.BlobCompactedBytes)
			}
			if sep < 0 && (c.BlobFlushedBytes != 0 || st.BlobFiles != 0) {
				t.Fatalf("separation off: %d blob bytes flushed, %d blob files", c.BlobFlushedBytes, st.BlobFiles)
			}
			vsepCheck(t, io, want, "after flush")
			if err := s.db.Compact(bg, []byte{0}, []byte{0xff}, true); err != nil {
				t.Fatal(err)
			}
			vsepCheck(t, io, want, "after compaction")
			vsepCheck(t, io, small, "after compaction")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = open()
			defer s.Close()
			io = mustIO(t, s, "p")
			vsepCheck(t, io, want, "after reopen")
			vsepCheck(t, io, small, "after reopen")
		})
	}
}

// TestValueSeparationSwitch: a directory moves freely between builds with
// separation on and off (main's build has none), keeping every object: off
// reads separated values and compacts them back into sstables, on
// separates what it flushes from then on. No format version changes.
func TestValueSeparationSwitch(t *testing.T) {
	fs := vfs.NewMem()
	open := func(sep int) *Store {
		s, err := Open(Options{Dir: "/d", FS: fs, Classes: testRegistry(), ValueSeparation: sep})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	all := map[string][]byte{}
	add := func(m map[string][]byte) {
		for k, v := range m {
			all[k] = v
		}
	}
	s := open(-1) // as main's build writes
	add(vsepData(t, mustIO(t, s, "p"), "a"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(1 << 10)
	io := mustIO(t, s, "p")
	vsepCheck(t, io, all, "off -> on")
	add(vsepData(t, io, "bb"))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := s.LSMStats(); st.BlobFileBytes == 0 {
		t.Fatal("no blob file after writes with separation on")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(-1)
	io = mustIO(t, s, "p")
	vsepCheck(t, io, all, "on -> off")
	if err := s.db.Compact(bg, []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	vsepCheck(t, io, all, "on -> off, compacted")
	if st := s.LSMStats(); st.BlobFiles != 0 {
		t.Fatalf("separation off, after a full compaction: %d blob files (%d bytes) left", st.BlobFiles, st.BlobFileBytes)
	}
	if v, ok, err := s.getSys(sysFormat); err != nil || !ok || !bytes.Equal(v, u64(nil, formatVersion)) {
		t.Fatalf("format %x %v %v", v, ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(1 << 10)
	defer s.Close()
	vsepCheck(t, mustIO(t, s, "p"), all, "off -> on again")
}
