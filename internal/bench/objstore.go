package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// ObjstoreConfig configures the object-layer workload.
type ObjstoreConfig struct {
	// Clients are the concurrency levels swept for omap and small writes.
	// Default 1, 4, 16, 64.
	Clients []int
	// Duration of each measured point. Default 3s.
	Duration time.Duration
	// ValueSize is the omap value size. Default 128.
	ValueSize int
	// SmallSize is the small-object size. Default 4096.
	SmallSize int
	// Objects is how many objects the omap clients spread over (index
	// shards). Default 16.
	Objects int
	// LargeClients are the concurrency levels for 4 MiB WriteFull.
	// Default 1, 4.
	LargeClients []int
	// Dir is the parent directory for the temporary store and the raw
	// write file ("" = the system temp dir).
	Dir string
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// LargeSize is the large-object size: RGW's default stripe (4 MiB).
const LargeSize = 4 << 20

// EnsureDefaults fills in zero fields.
func (c *ObjstoreConfig) EnsureDefaults() *ObjstoreConfig {
	if len(c.Clients) == 0 {
		c.Clients = []int{1, 4, 16, 64}
	}
	if c.Duration == 0 {
		c.Duration = 3 * time.Second
	}
	if c.ValueSize == 0 {
		c.ValueSize = 128
	}
	if c.SmallSize == 0 {
		c.SmallSize = 4096
	}
	if c.Objects == 0 {
		c.Objects = 16
	}
	if len(c.LargeClients) == 0 {
		c.LargeClients = []int{1, 4}
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// Validate reports every problem at once.
func (c *ObjstoreConfig) Validate() error {
	var errs []error
	for _, n := range append(append([]int{}, c.Clients...), c.LargeClients...) {
		if n < 1 || n > 4096 {
			errs = append(errs, fmt.Errorf("clients %d: want 1..4096", n))
		}
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: want > 0", c.Duration))
	}
	if c.ValueSize < 1 || c.ValueSize > objstore.MaxOmapValueLen {
		errs = append(errs, fmt.Errorf("value size %d out of range", c.ValueSize))
	}
	if c.SmallSize < 1 || c.SmallSize > 1<<20 {
		errs = append(errs, fmt.Errorf("small size %d out of range", c.SmallSize))
	}
	if c.Objects < 1 {
		errs = append(errs, fmt.Errorf("objects %d: want >= 1", c.Objects))
	}
	return errors.Join(errs...)
}

// Point is one measurement at one concurrency level.
type Point struct {
	Clients int `json:"clients"`
	Latency
	MBPerSec float64 `json:"mb_per_sec,omitempty"`
}

// ObjstoreResult is one run.
type ObjstoreResult struct {
	OmapSet    []Point `json:"omap_set"`
	OmapGet    []Point `json:"omap_get"`
	SmallWrite []Point `json:"small_write"`
	WriteFull  []Point `json:"writefull_4m"`
	// RawMBPerSec is the same disk's sequential synced write bandwidth,
	// measured in this run: 4 MiB O_DIRECT|O_DSYNC writes (dd bs=4M
	// oflag=direct,dsync), or RawBufferedMBPerSec where O_DIRECT is refused.
	RawMBPerSec float64 `json:"raw_seq_write_mb_per_sec"`
	// RawBufferedMBPerSec: 4 MiB buffered writes, each followed by
	// fdatasync (through the page cache, as the store writes).
	RawBufferedMBPerSec float64 `json:"raw_buffered_fdatasync_mb_per_sec"`
	// WriteFullRatio1 is single-client WriteFull MB/s over RawMBPerSec
	// (one synced stream each); WriteFullRatio is the best over any client
	// count.
	WriteFullRatio1 float64 `json:"writefull_1client_vs_raw,omitempty"`
	WriteFullRatio  float64 `json:"writefull_vs_raw"`
	// WriteFullVsBuffered is the best WriteFull MB/s over
	// RawBufferedMBPerSec: the same page-cache-and-sync path the store uses.
	WriteFullVsBuffered float64 `json:"writefull_vs_buffered_fdatasync"`
}

// RunObjstore runs every phase on one fresh store.
func RunObjstore(ctx context.Context, cfg ObjstoreConfig) (*ObjstoreResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st, dir, closeStore, err := tempStore(cfg.Dir, "objstore")
	if err != nil {
		return nil, err
	}
	defer closeStore()
	if err := st.CreatePool(ctx, "bench"); err != nil {
		return nil, err
	}
	io, err := st.IOContext(ctx, "bench")
	if err != nil {
		return nil, err
	}
	res := &ObjstoreResult{}
	val := pattern(cfg.ValueSize, 3)
	keys := make([][]int, 0) // keys written per client, for the get phase
	for _, n := range cfg.Clients {
		written := make([]int, n)
		l, err := closedLoop(ctx, n, cfg.Duration, func(c, i int) error {
			oid := fmt.Sprintf("omap.%d", c%cfg.Objects)
			op := objstore.NewWriteOp().SetOmap(objstore.KV{Key: fmt.Sprintf("k.%d.%d.%09d", n, c, i), Value: val})
			written[c] = i + 1
			return io.Operate(ctx, oid, op)
		})
		if err != nil {
			return res, fmt.Errorf("omap set: %w", err)
		}
		res.OmapSet = append(res.OmapSet, Point{Clients: n, Latency: l})
		fmt.Fprintf(cfg.Out, "omap set     %3d clients: %s\n", n, l)
		keys = append(keys, written)
	}
	// Gets read random keys written by the first set point's clients.
	first, nFirst := keys[0], cfg.Clients[0]
	for _, n := range cfg.Clients {
		l, err := closedLoop(ctx, n, cfg.Duration, func(c, i int) error {
			wc := rand.IntN(nFirst)
			if first[wc] == 0 {
				return nil
			}
			k := fmt.Sprintf("k.%d.%d.%09d", nFirst, wc, rand.IntN(first[wc]))
			op := objstore.NewReadOp()
			s := op.GetOmapValuesByKeys(k)
			if err := io.OperateRead(ctx, fmt.Sprintf("omap.%d", wc%cfg.Objects), op); err != nil {
				return err
			}
			if len(s.Pairs) != 1 {
				return fmt.Errorf("omap key %s missing", k)
			}
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("omap get: %w", err)
		}
		res.OmapGet = append(res.OmapGet, Point{Clients: n, Latency: l})
		fmt.Fprintf(cfg.Out, "omap get     %3d clients: %s\n", n, l)
	}
	small := pattern(cfg.SmallSize, 5)
	for _, n := range cfg.Clients {
		l, err := closedLoop(ctx, n, cfg.Duration, func(c, i int) error {
			return io.Operate(ctx, fmt.Sprintf("small.%d.%d.%d", n, c, i), objstore.NewWriteOp().WriteFull(small))
		})
		if err != nil {
			return res, fmt.Errorf("small write: %w", err)
		}
		p := Point{Clients: n, Latency: l, MBPerSec: l.OpsPerSec * float64(cfg.SmallSize) / 1e6}
		res.SmallWrite = append(res.SmallWrite, p)
		fmt.Fprintf(cfg.Out, "small write  %3d clients: %s\n", n, l)
	}

	// Raw bandwidth before and after WriteFull, on the same filesystem; the
	// better of the two is the baseline, so load elsewhere cannot flatter
	// the ratio.
	measureRaw := func() error {
		direct, buffered, err := rawSeqWrite(ctx, dir, cfg.Duration*2)
		if err != nil {
			return fmt.Errorf("raw write: %w", err)
		}
		fmt.Fprintf(cfg.Out, "raw sequential write, 4 MiB O_DIRECT|O_DSYNC: %.1f MB/s; buffered + fdatasync: %.1f MB/s\n", direct, buffered)
		raw := direct
		if raw == 0 {
			raw = buffered
		}
		res.RawMBPerSec = max(res.RawMBPerSec, raw)
		res.RawBufferedMBPerSec = max(res.RawBufferedMBPerSec, buffered)
		return nil
	}
	if err := measureRaw(); err != nil {
		return res, err
	}
	large := pattern(LargeSize, 9)
	for _, n := range cfg.LargeClients {
		l, err := closedLoop(ctx, n, cfg.Duration*2, func(c, i int) error {
			// Overwrite a bounded set of objects, as RGW rewrites stripes,
			// so the disk does not fill.
			return io.Operate(ctx, fmt.Sprintf("large.%d.%d", c, i%8), objstore.NewWriteOp().WriteFull(large))
		})
		if err != nil {
			return res, fmt.Errorf("writefull: %w", err)
		}
		p := Point{Clients: n, Latency: l, MBPerSec: l.OpsPerSec * LargeSize / 1e6}
		res.WriteFull = append(res.WriteFull, p)
		fmt.Fprintf(cfg.Out, "writefull 4M %3d clients: %s  %.1f MB/s\n", n, l, p.MBPerSec)
	}
	if err := measureRaw(); err != nil {
		return res, err
	}
	for _, p := range res.WriteFull {
		if res.RawMBPerSec > 0 {
			res.WriteFullRatio = max(res.WriteFullRatio, p.MBPerSec/res.RawMBPerSec)
			if p.Clients == 1 {
				res.WriteFullRatio1 = p.MBPerSec / res.RawMBPerSec
			}
		}
		if res.RawBufferedMBPerSec > 0 {
			res.WriteFullVsBuffered = max(res.WriteFullVsBuffered, p.MBPerSec/res.RawBufferedMBPerSec)
		}
	}
	return res, nil
}

// rawSeqWrite measures the disk's sequential synced write bandwidth in dir
// for d: 4 MiB writes with O_DIRECT|O_DSYNC (dd bs=4M oflag=direct,dsync),
// and 4 MiB buffered writes each followed by fdatasync. It returns MB/s for
// both; direct is 0 where O_DIRECT is refused. The file wraps at 2 GiB.
func rawSeqWrite(ctx context.Context, dir string, d time.Duration) (direct, buffered float64, err error) {
	path := filepath.Join(dir, "raw-write.bin")
	defer os.Remove(path)
	loop := func(f *os.File, buf []byte, sync bool) (float64, error) {
		defer f.Close()
		var n, off int64
		start := time.Now()
		for time.Since(start) < d && ctx.Err() == nil {
			if off >= 2<<30 {
				if _, err := f.Seek(0, 0); err != nil {
					return 0, err
				}
				off = 0
			}
			if _, err := f.Write(buf); err != nil {
				return 0, err
			}
			if sync {
				if err := fdatasync(f); err != nil {
					return 0, err
				}
			}
			n += int64(len(buf))
			off += int64(len(buf))
		}
		return float64(n) / time.Since(start).Seconds() / 1e6, nil
	}
	if f, ok := openDirectSync(path); ok {
		buf := alignedBuf(LargeSize)
		copy(buf, pattern(LargeSize, 1))
		if direct, err = loop(f, buf, false); err != nil {
			return 0, 0, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, 0, err
	}
	buffered, err = loop(f, pattern(LargeSize, 1), true)
	return direct, buffered, err
}
