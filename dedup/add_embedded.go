package dedup

import (
	"context"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Add implements Store: one write transaction that stores each key not
// there yet. Keys are visited in key order, as in Save, and a stable sort
// keeps the items of one key in their order, so the first one is stored
// and the others find it.
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
		b := tx.Bucket(boltBucket)
		if b == nil {
			return fmt.Errorf("bucket %q missing", boltBucket)
		}
		keys := make([]string, len(items))
		order := make([]int, len(items))
		for i, it := range items {
			keys[i], order[i] = storageKey(it.Key), i
		}
		slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		for _, i := range order {
			k := []byte(keys[i])
			if len(k) > bolt.MaxKeySize || b.Get(k) != nil {
				continue
			}
			if err := b.Put(k, encodeEntry(items[i].Entry)); err != nil {
				return err
			}
			added[i] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dedup add: %w", err)
	}
	return added, nil
}
