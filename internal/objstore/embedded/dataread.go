package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// chunkRead returns op's step when op is a single ReadStep of a non-empty
// range within one chunk (a read of a small object, or of a part of one
// chunk), else nil.
func chunkRead(op *objstore.ReadOp) *objstore.ReadStep {
	if len(op.Steps) != 1 {
		return nil
	}
	rs, ok := op.Steps[0].(*objstore.ReadStep)
	if !ok || rs.Offset < 0 || rs.Length <= 0 || rs.Offset/chunkSize != (rs.Offset+rs.Length-1)/chunkSize {
		return nil
	}
	return rs
}

// readCovered serves rs from its chunk alone, without the object's meta,
// when the chunk holds every byte of the range: a stored chunk means the
// object exists with inline data (its meta and chunks change in one batch;
// a removed or blob-backed object has no chunks), and no chunk holds bytes
// at or past the object's size, so the range lies within the object and
// reads as the chunk's bytes. ok is false (rs untouched) when the chunk is
// missing or shorter than the range: the caller reads the meta then, for
// the right error, a blob, the zeros of a hole or a short read at the end,
// and readData takes the chunk from t.seen rather than read it again. The
// caller holds the object's shared lock, under which a snapshot taken
// later still agrees with what was read here.
func (t *txn) readCovered(rs *objstore.ReadStep) (ok bool, err error) {
	idx := rs.Offset / chunkSize
	t.s.pointGets.Add(1)
	v, closer, err := t.r.Get(t.chunkKey(idx))
	if errors.Is(err, pebble.ErrNotFound) {
		t.seen = &seenChunk{idx: idx}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s, e := rs.Offset-idx*chunkSize, rs.Offset+rs.Length-idx*chunkSize
	if int64(len(v)) >= e {
		rs.Data = append(make([]byte, 0, e-s), v[s:e]...)
		ok = true
	} else {
		t.seen = &seenChunk{idx: idx, v: append(make([]byte, 0, len(v)), v...), found: true}
	}
	return ok, closer.Close()
}

// seenChunk is a chunk a read op has already looked up (readCovered).
type seenChunk struct {
	idx   int64
	v     []byte
	found bool
}

// OpenData opens [off, off+n) of an object's data for streaming, when the
// data lives in a blob file on the real disk: f is an *os.File positioned
// at off, of which the caller reads exactly n bytes and then closes it.
// Handing such a file to an HTTP response lets net/http send it with
// sendfile, with no copy through user space. ok is false (and f nil) when
// the data is inline in the LSM or the store runs on another vfs.FS; read
// it with OperateRead then.
//
// The open file keeps its bytes readable after a later overwrite or
// removal of the object (the blob is unlinked, not truncated), so the
// reader sees the version it opened, like an OperateRead. Errors:
// ErrNotFound for a missing object, ErrInvalid for a range outside it.
func (c *ioctx) OpenData(ctx context.Context, oid string, off, n int64) (f *os.File, ok bool, err error) {
	if err := c.check(ctx, oid); err != nil {
		return nil, false, err
	}
	if off < 0 || n < 0 {
		return nil, false, objstore.Errorf(objstore.ErrInvalid, "negative offset or length")
	}
	s := c.s
	if s.opts.FS != vfs.Default {
		return nil, false, nil
	}
	if err := c.rlockPool(); err != nil {
		return nil, false, err
	}
	e := s.locks.acquire(c.lockKey(oid))
	defer s.locks.release(e)
	e.rw.RLock()
	t := &txn{
		s: s, r: s.db, entry: e,
		prefix: objPrefix(c.pool.id, c.ns, oid),
		mkey:   metaKey(c.pool.id, c.ns, oid),
	}
	err = t.load()
	switch {
	case err != nil:
	case !t.exists:
		err = objstore.Errorf(objstore.ErrNotFound, "object %q", oid)
	case off+n > t.cur.size:
		err = objstore.Errorf(objstore.ErrInvalid, "range [%d, %d) outside object of %d bytes", off, off+n, t.cur.size)
	case t.cur.blob != 0:
		// Opened under the object's lock: the blob cannot be removed
		// before we hold it.
		f, err = os.Open(s.blobPath(t.cur.blob))
		if err == nil {
			if _, err = f.Seek(off, io.SeekStart); err != nil {
				f.Close()
				f = nil
			}
		}
		if err != nil {
			err = fmt.Errorf("embedded: open blob %016x: %w", t.cur.blob, err)
		}
	}
	pending := e.newest()
	e.rw.RUnlock()
	c.pool.mu.RUnlock()
	// As OperateRead: do not hand out data whose write is not yet durable.
	if werr := pending.wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, false, err
	}
	return f, f != nil, nil
}
