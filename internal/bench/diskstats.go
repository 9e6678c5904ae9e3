package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// diskCounters are one block device's cumulative counters from
// /proc/diskstats and the system's dirty page cache from /proc/meminfo:
// what a WAL fsync competes with that pebble's own counters do not show
// (the kernel's writeback of other files, other processes on the disk).
type diskCounters struct {
	ok                     bool
	writes, writeSectors   uint64
	readSectors            uint64
	writeMs, ioTicksMs     uint64
	flushes, flushMs       uint64
	dirtyKiB, writebackKiB uint64
}

// parseDiskstats finds the line of device major:minor in a
// /proc/diskstats text. Kernels before 4.18 have no discard fields and
// before 5.5 no flush fields: those read 0.
func parseDiskstats(text []byte, major, minor uint64) (diskCounters, bool) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 14 {
			continue
		}
		num := func(i int) uint64 {
			if i >= len(f) {
				return 0
			}
			n, _ := strconv.ParseUint(string(f[i]), 10, 64)
			return n
		}
		if num(0) != major || num(1) != minor {
			continue
		}
		// Fields 3, 5, 7, 8, 10, 16, 17 after major, minor and name
		// (Documentation/admin-guide/iostats.rst): sectors read, writes,
		// sectors written, ms writing, ms busy, flushes, ms flushing.
		return diskCounters{ok: true, readSectors: num(5), writes: num(7), writeSectors: num(9),
			writeMs: num(10), ioTicksMs: num(12), flushes: num(18), flushMs: num(19)}, true
	}
	return diskCounters{}, false
}

// parseMeminfo reads Dirty and Writeback (kB) from a /proc/meminfo text.
func parseMeminfo(text []byte) (dirty, writeback uint64) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		var name string
		var kb uint64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d", &name, &kb); err != nil {
			continue
		}
		switch name {
		case "Dirty:":
			dirty = kb
		case "Writeback:":
			writeback = kb
		}
	}
	return dirty, writeback
}

// diskSampler reads the counters of the device holding a directory.
type diskSampler struct {
	major, minor uint64
	ok           bool
}

func newDiskSampler(dir string) *diskSampler {
	major, minor, ok := deviceOf(dir)
	if !ok {
		return &diskSampler{}
	}
	ds, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return &diskSampler{}
	}
	if _, found := parseDiskstats(ds, major, minor); !found {
		return &diskSampler{}
	}
	return &diskSampler{major: major, minor: minor, ok: true}
}

func (d *diskSampler) read() diskCounters {
	if !d.ok {
		return diskCounters{}
	}
	ds, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return diskCounters{}
	}
	c, _ := parseDiskstats(ds, d.major, d.minor)
	if mi, err := os.ReadFile("/proc/meminfo"); err == nil {
		c.dirtyKiB, c.writebackKiB = parseMeminfo(mi)
	}
	return c
}
