package embedded

import "time"

// A scan that steps over many deleted keys to return a few live ones (a
// bucket whose oldest keys were deleted, listed from its start; a queue
// after a drained backlog) pays for every tombstone, and for the value
// each one shadows, on every scan until compaction carries them to the
// bottom level and drops them. Pebble schedules such compactions only
// when it owes no other work, which at scale is never. So a scan that
// met more than deadScanMin dead points asks for a compaction of the
// range it crossed: one at a time, at most one per deadCompactEvery.

// deadScanMin is the dead points one scan steps over before it asks:
// ~1 ms of stepping, about what a whole 1,000-key page costs.
const deadScanMin = 8192

// deadCompactEvery spaces the compactions: each rewrites the tables of
// every level that overlap the range. A var for tests.
var deadCompactEvery = 10 * time.Second

// noteDead is called by a scan of [lo, hi) that stepped over points
// internal points and returned live of them.
func (s *Store) noteDead(lo, hi []byte, points uint64, live int) {
	if points < uint64(live)+deadScanMin {
		return
	}
	now := time.Now().UnixNano()
	if last := s.deadLast.Load(); now-last < int64(deadCompactEvery) && last != 0 || !s.deadLast.CompareAndSwap(last, now) {
		return
	}
	if !s.deadRunning.CompareAndSwap(false, true) {
		return
	}
	s.bgMu.Lock()
	if s.closed.Load() {
		s.bgMu.Unlock()
		s.deadRunning.Store(false)
		return
	}
	s.bg.Add(1)
	s.bgMu.Unlock()
	s.deadAsked.Add(1)
	lo, hi = append([]byte(nil), lo...), append([]byte(nil), hi...)
	go func() {
		defer s.bg.Done()
		defer s.deadRunning.Store(false)
		if err := s.db.Compact(s.bgCtx, lo, hi, false); err != nil && s.bgCtx.Err() == nil {
			s.log.Warn("embedded: compaction of a dead range", "err", err)
			return
		}
		s.deadDone.Add(1)
	}()
}

// DeadRangeCompactions reports the compactions scans asked for because
// they stepped over many dead keys, and how many finished.
func (s *Store) DeadRangeCompactions() (asked, done int64) {
	return s.deadAsked.Load(), s.deadDone.Load()
}
