package dedup

import (
	"context"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/internal/store"
)

// boltBucket is the bbolt bucket that holds the entries. The file may be
// shared with other components (stats), which keep to their own buckets.
var boltBucket = []byte("dedup")

// embeddedStore keeps entries in the bucket "dedup" of a bbolt file, under
// storage keys digest+"|"+bucket with warcprox's JSON as values. A lookup
// batch is one read transaction, a save batch one write transaction.
//
// bbolt keys are limited to 32 KiB: an entry whose bucket name would make
// a longer key is not stored, and looking it up finds nothing (the capture
// is then archived in full, as without dedup).
type embeddedStore struct {
	db      *bolt.DB
	release func() error
	guard   store.Guard
}

var _ Store = (*embeddedStore)(nil)

// Embedded makes the embedded store in db, the file of spec, shared with
// stats; Close calls release.
func (backends) Embedded(db *bolt.DB, release func() error, _ store.Spec) (Store, error) {
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating bucket %q: %w", boltBucket, err)
	}
	return &embeddedStore{db: db, release: release}, nil
}

// Lookup implements Store. A stored value that does not parse counts as
// not found (the next save of its key replaces it).
func (s *embeddedStore) Lookup(ctx context.Context, keys []Key) ([]*Entry, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	out := make([]*Entry, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		if b == nil {
			return fmt.Errorf("bucket %q missing", boltBucket)
		}
		for i, k := range keys {
			sk := storageKey(k)
			if len(sk) > bolt.MaxKeySize {
				continue
			}
			// The value is only valid inside the transaction:
			// decodeEntry copies it into fresh strings.
			v := b.Get([]byte(sk))
			if v == nil {
				continue
			}
			if e, err := decodeEntry(v); err == nil {
				out[i] = &e
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded database: %w", err)
	}
	return out, nil
}

// Save implements Store.
func (s *embeddedStore) Save(ctx context.Context, items []Item) error {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return err
	}
	defer leave()
	if len(items) == 0 {
		return nil
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		if b == nil {
			return fmt.Errorf("bucket %q missing", boltBucket)
		}
		// In key order, as stats' bbolt store writes: a page's keys
		// move for every key inserted before them, so a large batch in
		// another order costs time quadratic in its size.
		keys := make([]string, len(items))
		order := make([]int, len(items))
		for i, it := range items {
			keys[i], order[i] = storageKey(it.Key), i
		}
		slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		for _, i := range order {
			if len(keys[i]) > bolt.MaxKeySize {
				continue
			}
			if err := b.Put([]byte(keys[i]), encodeEntry(items[i].Entry)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("dedup save: %w", err)
	}
	return nil
}

// Close implements Store: it releases the shared bbolt handle (the file
// closes with its last user).
func (s *embeddedStore) Close() error {
	return s.guard.Close(s.release)
}
