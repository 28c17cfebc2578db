package store

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"
)

// Opening a store is one switch on the spec's kind, the same for every
// user of the backends (dedup, stats), so that the same mistake gets the
// same error from each. To add a kind of backend:
//
//  1. its Kind, and its spec syntax in Parse;
//  2. its shared handle in Handles (one per file or server), and in
//     CheckRefused what a server can refuse for good at start, if anything;
//  3. a method for it in Backends and its case in Open: the compiler then
//     names each user that must say how it keeps its data there.

// Backends is how one user of the stores (dedup, stats) keeps its data in
// each kind of backend, a method per kind. Each is given the handle, shared
// with the other users of the same file or server, and its release, which
// the store's Close calls; if it fails, Open releases the handle.
type Backends[S any] interface {
	Embedded(db *bolt.DB, release func() error, spec Spec) (S, error)
	Redis(c redis.UniversalClient, release func() error, spec Spec) (S, error)
}

// ErrNoKind is Open's error for a Spec without a kind: one not made by
// Parse, which says None for an empty spec.
var ErrNoKind = errors.New("store: a spec without a kind (not made by store.Parse)")

// Open opens the store of b that spec names, taking its handle from h (a
// nil h: a handle of its own, closed with the store). For None it returns
// S's zero value (nil for an interface) and no error: no store.
func Open[S any](spec Spec, h *Handles, b Backends[S]) (S, error) {
	var zero S
	if h == nil {
		h = &Handles{}
	}
	switch spec.Kind {
	case None:
		return zero, nil
	case Embedded:
		db, release, err := h.Bolt(spec)
		if err != nil {
			return zero, fmt.Errorf("%s: %w", spec.Raw, err)
		}
		s, err := b.Embedded(db, release, spec)
		return made(spec, s, err, release)
	case Redis:
		c, release, err := h.Redis(spec)
		if err != nil {
			return zero, fmt.Errorf("%s: %w", spec.Raw, err)
		}
		s, err := b.Redis(c, release, spec)
		return made(spec, s, err, release)
	case "":
		return zero, ErrNoKind
	default:
		return zero, fmt.Errorf("store: %s: unknown kind of backend %q (have %s, %s, %s)", spec.Raw, spec.Kind, None, Embedded, Redis)
	}
}

// made passes on a store a user made, or, when it could not, releases its
// handle and names the spec in the error.
func made[S any](spec Spec, s S, err error, release func() error) (S, error) {
	if err != nil {
		_ = release()
		var zero S
		return zero, fmt.Errorf("%s: %w", spec.Raw, err)
	}
	return s, nil
}
