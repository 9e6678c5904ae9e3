//go:build rados

package radosstore

import "github.com/cairn-s3/cairn/internal/objstore"

// HoldObject takes oid's transaction slot, as a running transaction does.
// queued reports how many ops wait for group commit; release frees the
// slot and the entry.
func HoldObject(io objstore.IOContext, oid string) (release func(), queued func() int) {
	c := io.(*ioContext)
	e, unref := c.s.locks.ref(c.cacheKey(oid))
	e.sem <- struct{}{}
	return func() { <-e.sem; unref() }, func() int {
		e.qmu.Lock()
		defer e.qmu.Unlock()
		return len(e.queue)
	}
}
