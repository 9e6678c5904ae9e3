package push

import (
	"context"
)

// Limit bounds the pushes in flight through ep to n (n <= 0: no bound).
// A Push beyond the bound waits for a slot or for ctx; waiting ends with a
// retryable error. This keeps a slow endpoint from holding unbounded
// messages in memory.
func Limit(ep Endpoint, n int) Endpoint {
	if n <= 0 {
		return ep
	}
	l := &limited{ep: ep, sem: make(chan struct{}, n)}
	if b, ok := ep.(Batcher); ok {
		return &limitedBatcher{limited: l, b: b}
	}
	return l
}

// limitedBatcher keeps ep's batching behind the bound: a batch holds one
// slot per message (at most n).
type limitedBatcher struct {
	*limited
	b Batcher
}

func (l *limitedBatcher) PushBatch(ctx context.Context, msgs []Message, done func(i int, err error)) {
	k := min(len(msgs), cap(l.sem))
	for i := range k {
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			for range i {
				<-l.sem
			}
			for j := range msgs {
				done(j, Retryable(ctx.Err()))
			}
			return
		}
	}
	defer func() {
		for range k {
			<-l.sem
		}
	}()
	l.b.PushBatch(ctx, msgs, done)
}

type limited struct {
	ep  Endpoint
	sem chan struct{}
}

func (l *limited) Push(ctx context.Context, msg Message) error {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return Retryable(ctx.Err())
	}
	defer func() { <-l.sem }()
	return l.ep.Push(ctx, msg)
}

func (l *limited) Close() error { return l.ep.Close() }

// InFlight reports the pushes currently holding a slot of a Limit endpoint
// (0 for other endpoints). For metrics.
func InFlight(ep Endpoint) int {
	switch l := ep.(type) {
	case *limited:
		return len(l.sem)
	case *limitedBatcher:
		return len(l.sem)
	}
	return 0
}
