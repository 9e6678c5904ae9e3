package driver

import (
	"context"
	"crypto/md5"
	"errors"
	"io"
	"sync"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// ownerXattr on a run's first stripe names the bucket id and key the data
// was written for, so an orphan sweep can tell whose it was.
const ownerXattr = "cairn.owner"

var stripePool = sync.Pool{New: func() any { b := make([]byte, StripeSize); return &b }}

// writeRun streams body into stripes prefix, prefix.1, ... and returns the
// run and the MD5 of the bytes. On any error every stripe written so far is
// removed: a failed write leaves nothing behind.
func (d *Driver) writeRun(ctx context.Context, prefix, owner string, body io.Reader, limit int64) (bucketindex.Run, []byte, error) {
	run := bucketindex.Run{Prefix: prefix, StripeSize: StripeSize}
	h := md5.New()
	bp := stripePool.Get().(*[]byte)
	defer stripePool.Put(bp)
	buf := *bp
	var written []string
	fail := func(err error) (bucketindex.Run, []byte, error) {
		d.removeObjects(context.WithoutCancel(ctx), written)
		return bucketindex.Run{}, nil, err
	}
	for i := int64(0); ; i++ {
		n, err := io.ReadFull(body, buf)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fail(err)
		}
		last := err != nil
		if n == 0 && i > 0 {
			break
		}
		run.Size += int64(n)
		if run.Size > limit {
			return fail(ErrEntityTooLarge)
		}
		h.Write(buf[:n])
		oid := run.StripeOID(i)
		op := objstore.NewWriteOp().WriteFull(buf[:n])
		if i == 0 {
			op.SetXattr(ownerXattr, []byte(owner))
		}
		written = append(written, oid)
		if err := d.data.Operate(ctx, oid, op); err != nil {
			return fail(err)
		}
		if last {
			break
		}
	}
	return run, h.Sum(nil), nil
}

func (d *Driver) removeObjects(ctx context.Context, oids []string) {
	for _, oid := range oids {
		err := d.data.Operate(ctx, oid, objstore.NewWriteOp().Remove())
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
	io   objstore.IOContext
	runs []bucketindex.Run
	off  int64 // position in the object
	end  int64
	buf  []byte
}

func newManifestReader(ctx context.Context, io objstore.IOContext, m bucketindex.Manifest, off, n int64) *manifestReader {
	return &manifestReader{ctx: ctx, io: io, runs: m.Runs, off: off, end: off + n}
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

func (r *manifestReader) fill() error {
	// Find the run and stripe holding r.off.
	pos := r.off
	for _, run := range r.runs {
		if pos >= run.Size {
			pos -= run.Size
			continue
		}
		stripe := pos / run.StripeSize
		within := pos % run.StripeSize
		want := run.StripeSize - within
		if rest := run.Size - pos; rest < want {
			want = rest
		}
		if rest := r.end - r.off; rest < want {
			want = rest
		}
		if want > readChunk {
			want = readChunk
		}
		op := objstore.NewReadOp()
		rd := op.Read(within, want)
		if err := r.io.OperateRead(r.ctx, run.StripeOID(stripe), op); err != nil {
			return err
		}
		if int64(len(rd.Data)) != want {
			return io.ErrUnexpectedEOF
		}
		r.buf = rd.Data
		r.off += want
		return nil
	}
	return io.ErrUnexpectedEOF
}

func (r *manifestReader) Close() error { return nil }
