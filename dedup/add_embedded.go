package dedup

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Add implements Store: one write transaction; a key counts as taken when
// the compact layout has it, or (until migrated) the old one.
func (s *embeddedStore) Add(ctx context.Context, items []Item) ([]bool, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	added := make([]bool, len(items))
	if len(items) == 0 {
		return added, nil
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
		migrated := boltMigrated(b2)
		puts := make([]boltPut, 0, len(items))
		taken := make(map[Key]bool, len(items))
		for i, it := range items {
			k := it.Key.name()
			if taken[k] {
				continue
			}
			taken[k] = true
			sk := []byte(storageKey(k))
			oldTaken := !migrated && len(sk) <= bolt.MaxKeySize && old.Get(sk) != nil
			if bk, ok := embeddedKey(k); ok {
				if len(bk) > bolt.MaxKeySize || b2.Get(bk) != nil || oldTaken {
					continue
				}
				puts = append(puts, boltPut{b2, true, bk, packEntry(it.Entry, true)})
			} else {
				if len(sk) > bolt.MaxKeySize || old.Get(sk) != nil {
					continue
				}
				puts = append(puts, boltPut{old, false, sk, encodeEntry(it.Entry)})
			}
			added[i] = true
		}
		return putSorted(puts)
	})
	if err != nil {
		return nil, fmt.Errorf("dedup add: %w", err)
	}
	return added, nil
}
