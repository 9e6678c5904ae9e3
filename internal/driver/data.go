package driver

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// ownerXattr on a run's first stripe names the bucket id and key the data
// was written for, so an orphan sweep can tell whose it was.
const ownerXattr = "cairn.owner"

// Sized for the larger of clear and encrypted stripes.
var stripePool = sync.Pool{New: func() any { b := make([]byte, max(StripeSize, EncStripeSize)); return &b }}

// smallPool holds the first read of every body (see writeRun).
var smallPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// writeRun streams body into stripes prefix, prefix.1, ... and returns the
// run and the MD5 of the bytes. The stripes are written with DeferSync: the
// caller must commit the run with a synced op before acknowledging it. On any error every stripe written so far is
// removed: a failed write leaves nothing behind.
// hashData false skips the MD5 (encrypted runs hash their plaintext).
//
// A body of at most inlineMax bytes (0: none) is not written at all: the
// run comes back inline, its bytes in Data for the index entry. Else,
// with hold set, a body that fits the first small read is not written:
// the run's one stripe comes back as a heldStripe, for the caller to
// write in the same atomic commit as its index link (objstore.Atomic).
func (d *Driver) writeRun(ctx context.Context, pl placement, prefix, owner string, body io.Reader, limit, stripeSize int64, hashData, hold bool, inlineMax int64) (bucketindex.Run, []byte, *heldStripe, error) {
	run := bucketindex.Run{Prefix: prefix, StripeSize: stripeSize, Pool: pl.poolField()}
	var h hash.Hash = nopHash{}
	if hashData {
		h = md5.New()
	}
	// Most bodies are small: read into a small buffer first and take a
	// stripe-sized one only when the body goes on (a 4 MiB buffer per
	// in-flight small PUT was most of the heap at scale, and clearing new
	// ones showed in CPU profiles).
	sp := smallPool.Get().(*[]byte)
	defer func() {
		if sp != nil { // not handed to a heldStripe
			smallPool.Put(sp)
		}
	}()
	small := (*sp)[:min(int64(len(*sp)), stripeSize)]
	first, ferr := io.ReadFull(body, small)
	if ferr != nil && !errors.Is(ferr, io.EOF) && !errors.Is(ferr, io.ErrUnexpectedEOF) {
		return bucketindex.Run{}, nil, nil, ferr
	}
	if ferr != nil && int64(first) <= inlineMax {
		run.Size, run.StripeSize, run.Pool = int64(first), 0, ""
		if run.Size > limit {
			return bucketindex.Run{}, nil, nil, ErrEntityTooLarge
		}
		run.Inline, run.Data = true, bytes.Clone(small[:first])
		h.Write(run.Data)
		return run, h.Sum(nil), nil, nil
	}
	if ferr != nil && hold {
		run.Size = int64(first)
		if run.Size > limit {
			return bucketindex.Run{}, nil, nil, ErrEntityTooLarge
		}
		h.Write(small[:first])
		hs := &heldStripe{io: pl.io, oid: run.StripeOID(0), owner: owner, data: small[:first], buf: sp}
		sp = nil
		return run, h.Sum(nil), hs, nil
	}
	var buf []byte
	if ferr == nil {
		bp := stripePool.Get().(*[]byte)
		defer stripePool.Put(bp)
		buf = (*bp)[:stripeSize]
	}
	var written []string
	fail := func(err error) (bucketindex.Run, []byte, *heldStripe, error) {
		d.removeObjectsIn(context.WithoutCancel(ctx), pl.io, written)
		return bucketindex.Run{}, nil, nil, err
	}
	for i := int64(0); ; i++ {
		var chunk []byte
		var last bool
		if i == 0 && ferr != nil {
			chunk, last = small[:first], true // the whole body
		} else {
			off := 0
			if i == 0 {
				off = copy(buf, small[:first])
			}
			n, err := io.ReadFull(body, buf[off:])
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return fail(err)
			}
			last = err != nil
			chunk = buf[:off+n]
		}
		n := len(chunk)
		if n == 0 && i > 0 {
			break
		}
		run.Size += int64(n)
		if run.Size > limit {
			return fail(ErrEntityTooLarge)
		}
		h.Write(chunk)
		oid := run.StripeOID(i)
		op := objstore.NewWriteOp().WriteFull(chunk)
		// Every caller commits the run with a synced op (index link, part
		// record) before acknowledging: that sync makes the stripes durable.
		op.DeferSync = true
		// Stripe names carry the write's unique tag: nothing to read first.
		op.Fresh = true
		if i == 0 {
			op.SetXattr(ownerXattr, []byte(owner))
		}
		written = append(written, oid)
		if err := pl.io.Operate(ctx, oid, op); err != nil {
			return fail(err)
		}
		d.failpoint("data-stripe")
		if last {
			break
		}
	}
	if pl.ownSync {
		if err := objstore.Sync(ctx, pl.io); err != nil {
			return fail(err)
		}
	}
	return run, h.Sum(nil), nil, nil
}

// heldStripe is the one stripe of a small run, not yet written: it goes
// into the index link's atomic commit, so a small PUT costs the store one
// commit and one sync instead of two, and there is never a moment where
// the data exists unlinked (nothing to orphan on a crash).
type heldStripe struct {
	io         objstore.IOContext
	oid, owner string
	data       []byte
	buf        *[]byte // smallPool's, holding data until release
}

// req returns the stripe's write, a new op on each call (an op is used
// once; a link that meets a reshard runs again).
func (h *heldStripe) req() objstore.AtomicReq {
	op := objstore.NewWriteOp().WriteFull(h.data).SetXattr(ownerXattr, []byte(h.owner))
	op.DeferSync, op.Fresh = true, true // as writeRun's: the link's commit syncs it
	return objstore.AtomicReq{IO: h.io, OID: h.oid, Op: op}
}

// release gives the buffer back; h (or nil) is unusable after.
func (h *heldStripe) release() {
	if h != nil && h.buf != nil {
		smallPool.Put(h.buf)
		h.buf, h.data = nil, nil
	}
}

func (d *Driver) removeObjectsIn(ctx context.Context, io objstore.IOContext, oids []string) {
	for _, oid := range oids {
		err := io.Operate(ctx, oid, objstore.NewWriteOp().Remove())
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			d.log.Warn("remove data object", "oid", oid, "err", err)
		}
	}
}

// readChunk bounds one data read, so GET memory stays small whatever the
// object size.
const readChunk = 1 << 20

// manifestReader streams [off, off+n) of an object's runs.
type manifestReader struct {
	ctx  context.Context
	d    *Driver
	runs []bucketindex.Run
	off  int64 // position in the object
	end  int64
	buf  []byte
}

func newManifestReader(ctx context.Context, d *Driver, m bucketindex.Manifest, off, n int64) *manifestReader {
	return &manifestReader{ctx: ctx, d: d, runs: m.Runs, off: off, end: off + n}
}

func (r *manifestReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if r.off >= r.end {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// fileMin is the least stripe length and read length for which WriteTo
// asks the store for a file: smaller stripes are below the embedded
// backend's blob threshold (inline, so asking would cost a second lookup),
// and small reads gain nothing from sendfile.
const fileMin = 1 << 20

// locate returns the stripe holding r.off, the offset in it, how many
// bytes of the range it holds from there, the stripe's length and its
// pool; for an inline run, data holds those bytes instead (oid "").
func (r *manifestReader) locate() (oid string, within, want, stripeLen int64, pool string, data []byte, err error) {
	pos := r.off
	for _, run := range r.runs {
		if pos >= run.Size {
			pos -= run.Size
			continue
		}
		if run.Inline {
			want = min(run.Size-pos, r.end-r.off)
			if int64(len(run.Data)) != run.Size {
				return "", 0, 0, 0, "", nil, io.ErrUnexpectedEOF
			}
			return "", pos, want, run.Size, "", run.Data[pos : pos+want], nil
		}
		stripe := pos / run.StripeSize
		within = pos % run.StripeSize
		want = min(run.StripeSize-within, run.Size-pos, r.end-r.off)
		stripeLen = min(run.StripeSize, run.Size-stripe*run.StripeSize)
		return run.StripeOID(stripe), within, want, stripeLen, run.Pool, nil, nil
	}
	return "", 0, 0, 0, "", nil, io.ErrUnexpectedEOF
}

func (r *manifestReader) fill() error {
	oid, within, want, _, pool, data, err := r.locate()
	if err != nil {
		return err
	}
	if oid == "" {
		r.buf = data // the entry's bytes: read only, as rd.Data below
		r.off += want
		return nil
	}
	pio, err := r.d.dataIO(r.ctx, pool)
	if err != nil {
		return err
	}
	want = min(want, readChunk)
	op := objstore.NewReadOp()
	rd := op.Read(within, want)
	if err := pio.OperateRead(r.ctx, oid, op); err != nil {
		return err
	}
	if int64(len(rd.Data)) != want {
		return io.ErrUnexpectedEOF
	}
	r.buf = rd.Data
	r.off += want
	return nil
}

// dataOpener is implemented by stores that keep large data objects in
// files of their own (embedded.ioctx.OpenData): f is positioned at off and
// holds n bytes from there; ok is false when the object's data is not in
// such a file.
type dataOpener interface {
	OpenData(ctx context.Context, oid string, off, n int64) (f *os.File, ok bool, err error)
}

// WriteTo streams the rest of the range to w (io.Copy prefers it to Read).
// Stripes held in files go to w as file sections, which an HTTP response
// sends with sendfile: no read into memory, no copy through user space.
func (r *manifestReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	write := func() error {
		n, err := w.Write(r.buf)
		total += int64(n)
		r.buf = r.buf[n:]
		return err
	}
	if len(r.buf) > 0 {
		if err := write(); err != nil {
			return total, err
		}
	}
	for r.off < r.end {
		oid, within, want, stripeLen, pool, data, err := r.locate()
		if err != nil {
			return total, err
		}
		if oid == "" {
			r.buf, r.off = data, r.off+want
			if err := write(); err != nil {
				return total, err
			}
			continue
		}
		pio, err := r.d.dataIO(r.ctx, pool)
		if err != nil {
			return total, err
		}
		opener, _ := pio.(dataOpener)
		if opener != nil && stripeLen >= fileMin && want >= fileMin/8 {
			f, ok, err := opener.OpenData(r.ctx, oid, within, want)
			if err != nil {
				return total, err
			}
			if ok {
				n, err := io.Copy(w, &io.LimitedReader{R: f, N: want})
				f.Close()
				total += n
				r.off += n
				if err == nil && n != want {
					err = io.ErrUnexpectedEOF
				}
				if err != nil {
					return total, err
				}
				continue
			}
		}
		if err := r.fill(); err != nil {
			return total, err
		}
		if err := write(); err != nil {
			return total, err
		}
	}
	return total, nil
}

func (r *manifestReader) Close() error { return nil }

// nopHash stands in for the MD5 of runs that do not need it.
type nopHash struct{}

func (nopHash) Write(p []byte) (int, error) { return len(p), nil }
func (nopHash) Sum(b []byte) []byte         { return b }
func (nopHash) Reset()                      {}
func (nopHash) Size() int                   { return 0 }
func (nopHash) BlockSize() int              { return 1 }
