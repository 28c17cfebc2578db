package stats

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warcproxy/warcproxy/internal/store"
)

// Store keeps bucket values. Implementations are safe for concurrent use.
type Store interface {
	// Add applies the increments atomically per bucket and returns each
	// bucket's new totals (which include what other users of the same
	// backend have added).
	Add(ctx context.Context, deltas map[string]Bucket) (map[string]Bucket, error)
	// Get returns the values of the named buckets; buckets never added
	// to are absent from the map.
	Get(ctx context.Context, names []string) (map[string]Bucket, error)
	// Close releases the store; later calls return ErrClosed.
	Close() error
}

// SharedStore is implemented by stores whose data other processes change
// too (Redis). A Tracker re-reads the buckets of a shared store when their
// cached values are older than Options.RefreshInterval.
type SharedStore interface {
	Store
	Shared() bool
}

// ErrClosed is returned by a Store or Tracker used after Close.
var ErrClosed = errors.New("stats: closed")

// Factory opens a Store for a spec, taking database handles from h.
type Factory func(spec store.Spec, h *store.Handles) (Store, error)

// registry maps backend kinds to factories; backends fill it from init.
var registry = struct {
	sync.RWMutex
	m map[store.Kind]Factory
}{m: map[store.Kind]Factory{}}

// Register makes a backend available to Open. It panics if kind already
// has one; backends call it from init.
func Register(kind store.Kind, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	if f == nil {
		panic(fmt.Sprintf("stats: Register(%q) with a nil factory", kind))
	}
	if _, dup := registry.m[kind]; dup {
		panic(fmt.Sprintf("stats: backend %q registered twice", kind))
	}
	registry.m[kind] = f
}

// Open opens the Store a spec names. A "none" spec gives (nil, nil): no
// persistence (a Tracker then counts in memory only).
func Open(spec store.Spec, h *store.Handles) (Store, error) {
	if spec.Kind == store.None || spec.Kind == "" {
		return nil, nil
	}
	registry.RLock()
	f := registry.m[spec.Kind]
	registry.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("stats: no backend for %s (%q)", spec.Kind, spec.Raw)
	}
	if h == nil {
		return nil, fmt.Errorf("stats: opening %s: nil store.Handles", spec.Raw)
	}
	s, err := f(spec, h)
	if err != nil {
		return nil, fmt.Errorf("opening stats store %s: %w", spec.Raw, err)
	}
	return s, nil
}
