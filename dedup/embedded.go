package dedup

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/internal/store"
)

// Bucket names in the bbolt file. The file may be shared with other
// components (stats), which keep to their own buckets.
var (
	// boltBucket holds entries in the old layout: storage keys
	// digest+"|"+bucket, warcprox's JSON as values.
	boltBucket = []byte("dedup")
	// boltBucket2 holds the compact layout: key algorithm byte + digest
	// bytes + bucket, value packEntry with the full URL; and the marker.
	boltBucket2 = []byte("dedup2")
	// boltMarker is the marker's key in boltBucket2: no entry key starts
	// with a 0 byte.
	boltMarker = []byte("\x00layout")
)

// embeddedStore keeps entries in a bbolt file, in the compact layout
// (bucket "dedup2") and, until the file is migrated, also reads the old
// one (bucket "dedup"), in the same read transaction. A digest that does
// not decode keeps the old layout. A lookup batch is one read
// transaction, a save batch one write transaction.
//
// bbolt keys are limited to 32 KiB: an entry whose bucket name would make
// a longer key is not stored, and looking it up finds nothing (the capture
// is then archived in full, as without dedup).
type embeddedStore struct {
	db      *bolt.DB
	release func() error
	guard   store.Guard
	// migrateBatch: old entries per write transaction of migrate.
	migrateBatch int
}

var _ Store = (*embeddedStore)(nil)

// Embedded makes the embedded store in db, the file of spec, shared with
// stats; Close calls release.
func (backends) Embedded(db *bolt.DB, release func() error, _ store.Spec) (Store, error) {
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{boltBucket, boltBucket2} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("creating bucket %q: %w", name, err)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return &embeddedStore{db: db, release: release, migrateBatch: defaultMigrateBatch}, nil
}

// embeddedKey is k's key in boltBucket2, if its digest decodes.
func embeddedKey(k Key) ([]byte, bool) {
	d, ok := decodeDigest(k.Digest)
	if !ok {
		return nil, false
	}
	b := make([]byte, 0, 1+len(d.bytes)+len(k.Bucket))
	b = append(b, d.algo)
	b = append(b, d.bytes...)
	return append(b, k.Bucket...), true
}

// boltMigrated reports whether the file's marker says it is migrated.
func boltMigrated(b2 *bolt.Bucket) bool {
	v := b2.Get(boltMarker)
	if v == nil {
		return false
	}
	m, err := parseMarker(v)
	return err == nil && m.Migrated
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
		old, b2 := tx.Bucket(boltBucket), tx.Bucket(boltBucket2)
		if old == nil || b2 == nil {
			return fmt.Errorf("bucket %q or %q missing", boltBucket, boltBucket2)
		}
		migrated := boltMigrated(b2)
		for i, k := range keys {
			// Values are only valid inside the transaction: unpacking
			// and decoding copy them into fresh strings.
			if bk, ok := embeddedKey(k); ok {
				if len(bk) > bolt.MaxKeySize {
					continue
				}
				if v := b2.Get(bk); v != nil {
					if p, err := unpackEntry(v); err == nil && p.HasURL {
						out[i] = entryOf(p)
						continue
					}
				}
				if migrated {
					continue
				}
			}
			out[i] = lookupOldBolt(old, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded database: %w", err)
	}
	return out, nil
}

// lookupOldBolt reads k's entry in the old layout.
func lookupOldBolt(old *bolt.Bucket, k Key) *Entry {
	sk := storageKey(k)
	if len(sk) > bolt.MaxKeySize {
		return nil
	}
	v := old.Get([]byte(sk))
	if v == nil {
		return nil
	}
	e, err := decodeEntry(v)
	if err != nil {
		return nil
	}
	return &e
}

// boltPut is one write of a save batch.
type boltPut struct {
	bucket   *bolt.Bucket
	compact  bool // in boltBucket2 (written after the old bucket's puts)
	key, val []byte
}

// Save implements Store: entries go to the compact layout (the old one
// for a digest that does not decode), and the marker is written if the
// file has none.
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
		old, b2 := tx.Bucket(boltBucket), tx.Bucket(boltBucket2)
		if old == nil || b2 == nil {
			return fmt.Errorf("bucket %q or %q missing", boltBucket, boltBucket2)
		}
		if b2.Get(boltMarker) == nil {
			if err := b2.Put(boltMarker, marker{Layout: layoutCompact}.bytes()); err != nil {
				return err
			}
		}
		puts := make([]boltPut, 0, len(items))
		for _, it := range items {
			if bk, ok := embeddedKey(it.Key); ok {
				puts = append(puts, boltPut{b2, true, bk, packEntry(it.Entry, true)})
			} else {
				puts = append(puts, boltPut{old, false, []byte(storageKey(it.Key)), encodeEntry(it.Entry)})
			}
		}
		return putSorted(puts)
	})
	if err != nil {
		return fmt.Errorf("dedup save: %w", err)
	}
	return nil
}

// putSorted writes puts in key order, as stats' bbolt store writes: a
// page's keys move for every key inserted before them, so a large batch in
// another order costs time quadratic in its size. The sort is stable, so
// the last put of a key wins.
func putSorted(puts []boltPut) error {
	slices.SortStableFunc(puts, func(a, b boltPut) int {
		if a.compact != b.compact {
			if a.compact {
				return 1
			}
			return -1
		}
		return bytes.Compare(a.key, b.key)
	})
	for _, p := range puts {
		if len(p.key) > bolt.MaxKeySize {
			continue
		}
		if err := p.bucket.Put(p.key, p.val); err != nil {
			return err
		}
	}
	return nil
}

// Close implements Store: it releases the shared bbolt handle (the file
// closes with its last user).
func (s *embeddedStore) Close() error {
	return s.guard.Close(s.release)
}
