package embedded

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Blob files hold the data of objects written with a large WriteFull, so
// that those bytes are written once (plus one fsync) instead of going
// through the WAL, a flush and compactions. A blob is immutable; it is
// referenced by exactly one object's meta and by a B key.

func (s *Store) blobPath(id uint64) string {
	return s.opts.FS.PathJoin(s.blobDir, fmt.Sprintf("%016x.blob", id))
}

// writeBlob writes and syncs a new blob file and its directory entry. It
// runs before the object lock is taken: the commit only adds a pointer.
func (s *Store) writeBlob(data []byte) (uint64, error) {
	id := s.nextID()
	fs := s.opts.FS
	if s.directIO() {
		ok, err := s.writeBlobDirect(s.blobPath(id), data)
		if ok {
			if err == nil {
				err = s.syncBlobDir()
			}
			if err != nil {
				fs.Remove(s.blobPath(id))
				return 0, err
			}
			return id, nil
		}
	}
	f, err := fs.Create(s.blobPath(id), vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, fmt.Errorf("embedded: create blob: %w", err)
	}
	// Write through a scratch buffer: a vfs.File may scribble on what it is
	// given (pebble's MemFS does under invariants builds), and data is the
	// caller's.
	buf := make([]byte, min(len(data), 256<<10))
	for off := 0; off < len(data) && err == nil; off += len(buf) {
		n := copy(buf, data[off:])
		_, err = f.Write(buf[:n])
	}
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = s.syncBlobDir()
	}
	if err != nil {
		fs.Remove(s.blobPath(id))
		return 0, fmt.Errorf("embedded: write blob: %w", err)
	}
	return id, nil
}

func (s *Store) syncBlobDir() error {
	d, err := s.opts.FS.OpenDir(s.blobDir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// readBlob reads [off, off+len(p)) of a blob.
func (s *Store) readBlob(id uint64, off int64, p []byte) error {
	f, err := s.opts.FS.Open(s.blobPath(id))
	if err != nil {
		return fmt.Errorf("embedded: open blob %016x: %w", id, err)
	}
	defer f.Close()
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("embedded: read blob %016x: %w", id, err)
}

func (s *Store) removeBlob(id uint64) {
	if err := s.opts.FS.Remove(s.blobPath(id)); err != nil {
		s.log.Warn("embedded: remove blob", "blob", fmt.Sprintf("%016x", id), "err", err)
	}
}

// collectBlobs removes blob files no object references: written before a
// crash that prevented their commit, or replaced before a crash that
// prevented their removal.
func (s *Store) collectBlobs() error {
	names, err := s.opts.FS.List(s.blobDir)
	if err != nil {
		return fmt.Errorf("embedded: list blobs: %w", err)
	}
	removed := 0
	for _, n := range names {
		if len(n) != 21 || n[16:] != ".blob" {
			continue
		}
		id, err := strconv.ParseUint(n[:16], 16, 64)
		if err != nil {
			continue
		}
		_, c, err := s.db.Get(blobRefKey(id))
		if err == nil {
			c.Close()
			continue
		}
		if !errors.Is(err, pebble.ErrNotFound) {
			return err
		}
		s.removeBlob(id)
		removed++
	}
	if removed > 0 {
		s.log.Info("embedded: removed unreferenced blobs", "count", removed)
	}
	return nil
}
