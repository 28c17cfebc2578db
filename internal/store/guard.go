package store

import (
	"context"
	"sync"
)

// Guard makes a backend's operations fail after Close, and makes Close
// wait for the operations in progress before it releases the handle.
type Guard struct {
	mu     sync.RWMutex
	closed bool
}

// Enter starts an operation, or fails with ctx's error or, after Close,
// with errClosed. Call leave when the operation ends.
func (g *Guard) Enter(ctx context.Context, errClosed error) (leave func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return nil, errClosed
	}
	return g.mu.RUnlock, nil
}

// Close marks the backend closed once the operations in progress ended and
// calls release (which may be nil); a second Close does nothing.
func (g *Guard) Close(release func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	if release == nil {
		return nil
	}
	return release()
}
