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
	return &limited{ep: ep, sem: make(chan struct{}, n)}
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
	if l, ok := ep.(*limited); ok {
		return len(l.sem)
	}
	return 0
}
