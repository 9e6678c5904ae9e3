package delivery

import "sync"

// slots bounds pushes in flight (per endpoint, and over the gateway). A
// dispatch takes the slots of a whole pipelined batch at once, first come
// first served: with one slot at a time, the shards' workers competing for
// a full endpoint each won the slot one answer freed and sent it alone, so
// with 11 shards a backlog went out 1.4 events per exchange against 13
// with one shard (docs/bench/notify-issue25.md, "Round 8b").
//
// A waiter never holds part of its request, so two waiters cannot each
// hold half of what the other needs; a request larger than the whole
// bound is cut to it.
type slots struct {
	mu      sync.Mutex
	size    int
	used    int
	waiters []*slotWaiter // FIFO: a large request is not starved by small ones
}

type slotWaiter struct {
	n     int
	ready chan struct{} // closed when the n slots were given to it
}

func newSlots(size int) *slots { return &slots{size: size} }

// acquire takes n slots (at most the bound), waiting in turn until they
// are free or done is closed. It returns how many it took: n cut to the
// bound, or 0 when done was closed first.
func (s *slots) acquire(done <-chan struct{}, n int) int {
	n = min(n, s.size)
	s.mu.Lock()
	if len(s.waiters) == 0 && s.used+n <= s.size {
		s.used += n
		s.mu.Unlock()
		return n
	}
	wt := &slotWaiter{n: n, ready: make(chan struct{})}
	s.waiters = append(s.waiters, wt)
	s.mu.Unlock()
	select {
	case <-wt.ready:
		return n
	case <-done:
	}
	s.mu.Lock()
	select {
	case <-wt.ready: // granted meanwhile: give them back
		s.mu.Unlock()
		s.release(n)
		return 0
	default:
	}
	for i, o := range s.waiters {
		if o == wt {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			break
		}
	}
	s.grant() // the head may have changed
	s.mu.Unlock()
	return 0
}

// tryAcquire takes n slots if they are free now and nobody waits.
func (s *slots) tryAcquire(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) > 0 || s.used+n > s.size {
		return false
	}
	s.used += n
	return true
}

// release gives back n slots and wakes the waiters they satisfy, in order.
func (s *slots) release(n int) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.used -= n
	if s.used < 0 {
		s.mu.Unlock()
		panic("delivery: slots released more than acquired")
	}
	s.grant()
	s.mu.Unlock()
}

// grant hands free slots to waiters in order; s.mu held.
func (s *slots) grant() {
	for len(s.waiters) > 0 {
		wt := s.waiters[0]
		if s.used+wt.n > s.size {
			return
		}
		s.used += wt.n
		s.waiters[0] = nil
		s.waiters = s.waiters[1:]
		close(wt.ready)
	}
}

// waiting reports the requests waiting (tests).
func (s *slots) waiting() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(s.waiters))
	for i, wt := range s.waiters {
		out[i] = wt.n
	}
	return out
}

// free reports the slots free now (tests).
func (s *slots) free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size - s.used
}
