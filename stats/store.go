package stats

import (
	"context"
	"errors"

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

// Open opens the Store a spec names (store.Open: the same errors as
// dedup.Open), taking its database handle from h (nil: one of its own).
// A "none" spec gives (nil, nil): no persistence (a Tracker then counts
// in memory only).
func Open(spec store.Spec, h *store.Handles) (Store, error) {
	return store.Open(spec, h, backends{})
}

// backends makes a Store in each kind of backend: bolt.go, redis.go.
type backends struct{}

var _ store.Backends[Store] = backends{}
