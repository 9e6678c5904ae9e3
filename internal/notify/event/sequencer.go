package event

import (
	"fmt"
	"strconv"
	"sync"
	"time"
)

// SequencerWidth is the number of hex digits in a sequencer. Fixed width
// and big-endian, so that comparing two sequencers as strings compares them
// as numbers (RGW's little-endian timestamp does not sort).
const SequencerWidth = 16

// FormatSequencer renders v as 16 upper-case hex digits (by hand: it runs
// for every event, and fmt cost a microsecond of it).
func FormatSequencer(v uint64) string {
	const digits = "0123456789ABCDEF"
	var b [SequencerWidth]byte
	for i := SequencerWidth - 1; i >= 0; i-- {
		b[i] = digits[v&0xF]
		v >>= 4
	}
	return string(b[:])
}

// ParseSequencer reverses FormatSequencer.
func ParseSequencer(s string) (uint64, error) {
	if len(s) != SequencerWidth {
		return 0, fmt.Errorf("event: sequencer %q is not %d hex digits", s, SequencerWidth)
	}
	return strconv.ParseUint(s, 16, 64)
}

// Clock issues sequencers: a hybrid logical clock whose values are Unix
// nanoseconds when the wall clock moves forward and a counter otherwise.
//
// Guarantee: within one process Next values strictly increase, even if
// the wall clock steps back. Across processes, order per key comes from
// NextAfter: the producer passes the sequencer of the key's current
// version (read in the same serialised step that replaces it, e.g. the
// guarded head-object update), and the result is larger than it. So the
// events of one key carry increasing sequencers no matter which gateway
// wrote them, as long as the previous sequencer is read under the same
// serialisation as the write.
//
// Values stay below 2^63 until the year 2262.
type Clock struct {
	mu   sync.Mutex
	last uint64
	now  func() time.Time
}

// NewClock returns a clock on the wall time; now may be nil (time.Now).
func NewClock(now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now}
}

// Next returns a value larger than every value this clock returned before.
func (c *Clock) Next() uint64 { return c.NextAfter(0) }

// NextAfter returns a value larger than prev and than every value this
// clock returned before, and advances the clock past prev (so a clock that
// lags another gateway's catches up).
func (c *Clock) NextAfter(prev uint64) uint64 {
	wall := uint64(c.now().UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	v := max(wall, c.last+1, prev+1)
	c.last = v
	return v
}
