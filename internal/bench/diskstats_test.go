package bench

import "testing"

func TestParseDiskstats(t *testing.T) {
	text := []byte(`   7       0 loop0 10 0 20 1 0 0 0 0 0 4 1 0 0 0 0 0 0
 254       0 vda 9261889 267883 176564402 8604505 253447611 4195120 4251454616 14605693 0 12666280 28408361 984338 80 3714061096 352445 115829171 4845716
 254       1 vda1 100 2 300 4 500 6 700 8 0 10 11 12 13 14 15 16 17
 8       0 sdb 1 2 3 4 5 6 7 8 9 10 11
`)
	c, ok := parseDiskstats(text, 254, 0)
	want := diskCounters{ok: true, readSectors: 176564402, writes: 253447611, writeSectors: 4251454616,
		writeMs: 14605693, ioTicksMs: 12666280, flushes: 115829171, flushMs: 4845716}
	if !ok || c != want {
		t.Fatalf("vda: %+v %v, want %+v", c, ok, want)
	}
	if c, ok = parseDiskstats(text, 254, 1); !ok || c.writes != 500 || c.flushes != 16 || c.flushMs != 17 {
		t.Fatalf("vda1: %+v %v", c, ok)
	}
	// A kernel before 4.18 has 11 fields after the name: no discards, no flushes.
	if c, ok = parseDiskstats(text, 8, 0); !ok || c.writes != 5 || c.ioTicksMs != 10 || c.flushes != 0 {
		t.Fatalf("sdb: %+v %v", c, ok)
	}
	if _, ok = parseDiskstats(text, 8, 1); ok {
		t.Fatal("found a device that is not there")
	}
}

func TestParseMeminfo(t *testing.T) {
	dirty, wb := parseMeminfo([]byte("MemTotal:       24000000 kB\nDirty:              1234 kB\nWriteback:            56 kB\nWritebackTmp:          7 kB\n"))
	if dirty != 1234 || wb != 56 {
		t.Fatalf("dirty %d writeback %d", dirty, wb)
	}
}
