package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/internal/store"
)

// boltBucket is the bbolt bucket holding the stats; the file may hold
// other packages' buckets (dedup) too.
const boltBucket = "stats"

// boltStore keeps buckets in the "stats" bucket of a bbolt file: key the
// bucket name, value warcprox's JSON document. One process at a time.
type boltStore struct {
	db      *bolt.DB
	release func() error

	guard store.Guard
}

var _ Store = (*boltStore)(nil)

// Embedded makes the embedded store in db, the file of a spec, shared with
// dedup; Close calls release.
func (backends) Embedded(db *bolt.DB, release func() error, _ store.Spec) (Store, error) {
	return newBoltStore(db, release), nil
}

// newBoltStore uses db; Close calls release (nil: nothing to release).
func newBoltStore(db *bolt.DB, release func() error) *boltStore {
	return &boltStore{db: db, release: release}
}

// Add adds the increments in one write transaction.
func (s *boltStore) Add(ctx context.Context, deltas map[string]Bucket) (map[string]Bucket, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	out := make(map[string]Bucket, len(deltas))
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(boltBucket))
		if err != nil {
			return err
		}
		// In key order: bbolt inserts each new key into its page's
		// sorted list, moving the keys after it, and a page grows
		// without a split until the commit, so keys in map order cost
		// time quadratic in their number (100,000 new buckets: minutes).
		for _, name := range slices.Sorted(maps.Keys(deltas)) {
			d := deltas[name]
			if !validName(name) {
				return fmt.Errorf("bucket name of %d bytes (want 1..%d)", len(name), MaxNameLen)
			}
			v, err := decodeDoc(b.Get([]byte(name)))
			if err != nil {
				return fmt.Errorf("bucket %q: %w", name, err)
			}
			v.add(d)
			enc, _ := v.Doc(name).MarshalJSON()
			if err := b.Put([]byte(name), enc); err != nil {
				return fmt.Errorf("bucket %q: %w", name, err)
			}
			out[name] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("adding to stats: %w", err)
	}
	return out, nil
}

// Get reads the named buckets in one read transaction.
func (s *boltStore) Get(ctx context.Context, names []string) (map[string]Bucket, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	out := make(map[string]Bucket, len(names))
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(boltBucket))
		if b == nil {
			return nil
		}
		for _, name := range names {
			if !validName(name) {
				continue
			}
			raw := b.Get([]byte(name))
			if raw == nil {
				continue
			}
			v, err := decodeDoc(raw)
			if err != nil {
				return fmt.Errorf("bucket %q: %w", name, err)
			}
			out[name] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading stats: %w", err)
	}
	return out, nil
}

// Close releases the file (it stays open while dedup still uses it).
func (s *boltStore) Close() error {
	return s.guard.Close(s.release)
}

// decodeDoc parses a stored document; nil is an empty bucket.
func decodeDoc(raw []byte) (Bucket, error) {
	if raw == nil {
		return Bucket{}, nil
	}
	var d Doc
	if err := json.Unmarshal(raw, &d); err != nil {
		return Bucket{}, fmt.Errorf("bad stored value: %w", err)
	}
	return d.Value(), nil
}
