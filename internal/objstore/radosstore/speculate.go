//go:build rados

package radosstore

import (
	"sync/atomic"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Absent-key speculation. A class method that looks up an omap key the
// model does not know costs a guarded read round trip before the write:
// for a bucket index link of a new key that read always answers "absent",
// and it is a third of the PUT's round trips on RADOS. A speculating model
// answers such a lookup "absent" at once and the write asserts it
// (omap_cmp key == "" holds exactly for a missing key, as the objstore
// conformance suite checks; our values are never empty). A wrong guess
// fails the whole write with ECANCELED and the batch reruns reading, so a
// guess can cost a round trip but never a wrong result; results that are
// not written (a method's refusal, a read-only outcome) are never taken
// from a guess: the batch reruns reading first.
//
// Guessing is adaptive per pool and method: a refuted guess adds
// specMissCost to the score, a confirmed one and each txn run without
// guessing take one off, and above specLimit the method does not guess, so
// an overwrite-heavy workload stops guessing after a few misses and tries
// again after a while.
const (
	specMissCost = 8
	specLimit    = 16
	specMax      = 64
)

// specScore is the guess score of one method in one pool: methods that
// look up keys they expect present (a queue's commit of its reservation)
// stop guessing without stopping those that create keys (an index link).
func (c *ioContext) specScore(ops []*pendingOp) *atomic.Int32 {
	k := c.pool
	if len(ops) > 0 && len(ops[0].op.Steps) > 0 {
		if e, ok := ops[0].op.Steps[0].(*objstore.ExecStep); ok {
			k += "\x00" + e.Class + "." + e.Method
		}
	}
	if v, ok := c.s.spec.Load(k); ok {
		return v.(*atomic.Int32)
	}
	v, _ := c.s.spec.LoadOrStore(k, new(atomic.Int32))
	return v.(*atomic.Int32)
}

// shouldSpeculate reports whether a write txn of ops may guess; a txn that
// does not guess decays the score.
func shouldSpeculate(sc *atomic.Int32) bool {
	if sc.Load() <= specLimit {
		return true
	}
	sc.Add(-1)
	return false
}

// specDone records whether a write resting on guesses held.
func (c *ioContext) specDone(sc *atomic.Int32, held bool) {
	if held {
		c.s.specHits.Add(1)
		if sc.Load() > 0 {
			sc.Add(-1)
		}
		return
	}
	c.s.specMisses.Add(1)
	if sc.Load() < specMax {
		sc.Add(specMissCost)
	}
}

func (m *model) assume(k string) {
	m.baseOmap[k] = ovVal{del: true}
	m.assumed = append(m.assumed, k)
}

// guards are the write's assertions for the model's guesses.
func (m *model) guards() []objstore.Step {
	out := make([]objstore.Step, len(m.assumed))
	for i, k := range m.assumed {
		out[i] = &objstore.OmapCmp{Key: k, Op: objstore.CmpEQ}
	}
	return out
}
